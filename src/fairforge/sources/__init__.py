"""Data sources: adapters that list a dataset's images, groups and subject-level splits.

``build_sources('rfw', root, 'rfw', group_by=['race'], split_fractions={...}, seed=0)``
returns the sources manifest (docs/architecture.md section 2): :func:`list_sources` (labels and splits,
files unopened) then :func:`inspect_sources` (each file's size and hash), which the workflow
runs shard by shard. Adapters: ``list_adapters()``.
"""
from fairforge.sources.adapters import (
    DEFAULT_SPLIT,
    SOURCE_COLUMNS,
    SourceError,
    build_sources,
    diveface_group,
    get_adapter,
    group_of,
    image_id_from_path,
    image_root,
    inspect_image_file,
    inspect_sources,
    list_adapters,
    list_sources,
    parse_utkface_name,
    register_adapter,
)
from fairforge.sources.split import (
    SPLITS,
    SplitError,
    assign_subject_splits,
    check_fractions,
    split_by_subject,
    split_counts,
)

__all__ = [
    "DEFAULT_SPLIT", "SOURCE_COLUMNS", "SPLITS", "SourceError", "SplitError",
    "assign_subject_splits", "build_sources", "check_fractions", "diveface_group",
    "get_adapter", "group_of", "image_id_from_path", "image_root", "inspect_image_file",
    "inspect_sources", "list_adapters", "list_sources", "parse_utkface_name", "register_adapter", "split_by_subject",
    "split_counts",
]

from fairforge.video import frames as _video_frames  # noqa: E402,F401  (registers synthetic_video, video)
