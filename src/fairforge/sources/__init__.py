"""Data sources: adapters that list a dataset's images, groups and subject-level splits.

``build_sources('rfw', root, 'rfw', group_by=['race'], split_fractions={...}, seed=0)``
returns the sources manifest (docs/architecture.md section 2): :func:`list_sources` (labels and
splits, files unopened) then :func:`inspect_sources` (each file's size and hash), which the workflow
runs shard by shard. Adapters are registered on :data:`ADAPTERS` (``list_adapters()``); the
video adapters of FaceForensics++, DFDC and DeeperForensics-1.0 register when
:mod:`fairforge.video` is imported; the video datasets added since (Celeb-DF v1 and v2, UADFV,
DF-TIMIT, ForgeryNet) are one file each here, and sample their frames with the sampler
:mod:`fairforge.video` registers (:mod:`fairforge.sources.videos`).
"""

# Importing the adapters module registers the image adapters, and each dataset's own file
# registers its adapter (their frames are sampled by fairforge.video once it is imported).
from fairforge.sources import celebdf, celebdf_v1, dftimit, forgerynet, uadfv  # noqa: F401
from fairforge.sources.adapters import diveface_group, parse_utkface_name
from fairforge.sources.base import (
    ADAPTERS,
    IMAGE_SUFFIXES,
    SourceAdapter,
    SourceError,
    get_adapter,
    image_id_from_path,
    image_root,
    list_adapters,
    real_only,
)
from fairforge.sources.build import (
    DEFAULT_SPLIT,
    SOURCE_COLUMNS,
    build_sources,
    group_of,
    inspect_image_file,
    inspect_sources,
    list_dataset,
    list_sources,
    resolved_split,
)
from fairforge.sources.split import (
    SPLITS,
    SplitError,
    SplitSpec,
    assign_subject_splits,
    check_fractions,
    check_subject_disjoint,
    parse_split,
    split_by_subject,
    split_counts,
    split_report,
)

__all__ = [
    "ADAPTERS",
    "DEFAULT_SPLIT",
    "IMAGE_SUFFIXES",
    "SOURCE_COLUMNS",
    "SPLITS",
    "SourceAdapter",
    "SourceError",
    "SplitError",
    "SplitSpec",
    "assign_subject_splits",
    "build_sources",
    "check_fractions",
    "check_subject_disjoint",
    "diveface_group",
    "get_adapter",
    "group_of",
    "image_id_from_path",
    "image_root",
    "inspect_image_file",
    "inspect_sources",
    "list_adapters",
    "list_dataset",
    "list_sources",
    "parse_split",
    "parse_utkface_name",
    "real_only",
    "resolved_split",
    "split_by_subject",
    "split_counts",
    "split_report",
]
