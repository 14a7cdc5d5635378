"""Data sources: adapters that list a dataset's images, groups and subject-level splits.

``build_sources('rfw', root, 'rfw', group_by=['race'], split_fractions={...}, seed=0)``
returns the sources manifest (docs/architecture.md section 2): :func:`list_sources` (labels and
splits, files unopened) then :func:`inspect_sources` (each file's size and hash), which the workflow
runs shard by shard. Adapters are registered on :data:`ADAPTERS` (``list_adapters()``), one
file each here: the image datasets (``rfw``, ``utkface``, ``fairface``, ``diveface``,
``vggface2``), any csv of images (``csv_table``), the synthetic world
(``synthetic/adapter``), the video datasets in their released layouts (``faceforensics``,
``celebdf``, ``celebdf_v1``, ``dfdc``, ``deeperforensics``, ``uadfv``, ``dftimit``,
``forgerynet``) and a labels csv of videos (``labelled_videos``). The video adapters read
layouts only and sample their frames with the sampler :mod:`fairforge.video` registers
(:mod:`fairforge.sources.videos`); ``synthetic_video``, which renders its videos, registers
with :mod:`fairforge.video`.
"""

# Importing each adapter's module registers it.
from fairforge.sources import (  # noqa: F401
    celebdf,
    celebdf_v1,
    csv_table,
    deeperforensics,
    dfdc,
    dftimit,
    diveface,
    faceforensics,
    fairface,
    forgerynet,
    labelled_videos,
    rfw,
    uadfv,
    utkface,
    vggface2,
)
from fairforge.sources.base import (
    ADAPTERS,
    IMAGE_SUFFIXES,
    SourceAdapter,
    SourceError,
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
from fairforge.sources.diveface import diveface_group
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
from fairforge.sources.synthetic import adapter as synthetic_adapter  # noqa: F401
from fairforge.sources.utkface import parse_utkface_name

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
