"""Data sources: adapters that list a dataset's images, groups and subject-level splits.

``build_sources('rfw', root, 'rfw', group_by=['race'], split_fractions={...}, seed=0)``
returns the sources manifest (DESIGN.md section 2). Adapters: ``list_adapters()``.
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
    list_adapters,
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
    "list_adapters", "parse_utkface_name", "register_adapter", "split_by_subject",
    "split_counts",
]

from fairforge.video import frames as _video_frames  # noqa: E402,F401  (registers synthetic_video, video)
