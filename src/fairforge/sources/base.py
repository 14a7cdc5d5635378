"""The source-adapter family: :data:`ADAPTERS` and the :class:`SourceAdapter` hooks every
member implements, with the helpers adapters share to build a listing.

An adapter owns everything the rest of the package needs to know about one kind of
dataset, so that the workflow and the scripts call its hooks and never ask for its name:

- :attr:`~SourceAdapter.default_group_by`: the attributes that form a group by default;
- :meth:`~SourceAdapter.resolve_root`: the folder that listed paths are relative to;
- :meth:`~SourceAdapter.count_items`: how many rows the listing will have at most, cheaply
  (no decoding), so that the workflow can plan shards before listing;
- :meth:`~SourceAdapter.listing_options`: the keyword arguments of :meth:`~SourceAdapter.list`
  for a dataset block of the config;
- :meth:`~SourceAdapter.list`: one row per image with the columns :data:`LISTING_COLUMNS`;
- :meth:`~SourceAdapter.prepare_shard`: make one shard's files exist before they are read
  (the synthetic world renders them there);
- :meth:`~SourceAdapter.release_aligned`: which images are the release's own aligned face
  crops (a real one whose face the detector misses stays a sample);
- :meth:`~SourceAdapter.fake_references`: where the dataset keeps the released mask of each
  fake it ships and the pristine image it was made from (the masks of mask-supervised
  training).

A row whose labels cannot be read (a malformed UTKFace name) stays with ``ok=False``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import ClassVar

import numpy as np
import pandas as pd

from fairforge.columns import FAKE_REFERENCE_COLUMNS, LABEL_COLUMNS, LISTING_COLUMNS
from fairforge.images import IMAGE_SUFFIXES
from fairforge.registry import Registry


class SourceError(ValueError):
    """A dataset that cannot be listed as asked (layout, columns, options)."""


class SourceAdapter:
    """One kind of dataset. Subclasses override :meth:`list` and whichever hooks differ
    from a dataset on disk under the configured ``root``."""

    default_group_by: ClassVar[tuple[str, ...]] = ("group",)
    # The adapter writes its images (rendered or decoded) under the root it is given, so the
    # root need not exist before listing.
    writes_images: ClassVar[bool] = False
    # Its faces are invented by the renderer, not photographs of people (the report says so).
    synthetic: ClassVar[bool] = False
    # Whether the dataset's own split (split: official) keeps every identity in one split;
    # a dataset that defines it otherwise (Celeb-DF's test list) says so, and the split is
    # then taken as published unless the config asks for split.subject_disjoint.
    official_subject_disjoint: ClassVar[bool] = True
    # The release's images are aligned face crops (RFW's, FairFace's): FairFD (§3.3) uses
    # RFW's faces as they are, so a real image stays a sample when the face detector misses
    # it; the detection is only what forgeries are made from.
    aligned_release: ClassVar[bool] = False

    def resolve_root(self, name: str, dataset_cfg: Mapping, results_dir: str | Path) -> Path:
        """The folder that the listed paths are relative to."""
        return configured_root(name, dataset_cfg)

    def listing_options(self, name: str, dataset_cfg: Mapping) -> dict:
        """Keyword arguments of :meth:`list` for a dataset block of the config."""
        return dict(dataset_cfg.get("options") or {})

    def count_items(self, name: str, dataset_cfg: Mapping) -> int:
        """An upper bound on the rows :meth:`list` returns, without decoding anything."""
        root = configured_root(name, dataset_cfg)
        if not root.is_dir():
            raise FileNotFoundError(f"config: datasets.{name}.root: folder not found: {root}")
        return len(iter_images(root))

    def list(self, root: Path, *, seed: int = 0, **options) -> pd.DataFrame:
        """One row per image (columns :data:`LISTING_COLUMNS`, paths relative to ``root``
        or absolute)."""
        raise NotImplementedError

    def prepare_shard(
        self, rows: pd.DataFrame, root: Path, *, seed: int, name: str, dataset_cfg: Mapping
    ) -> None:
        """Make the files of ``rows`` (one shard of the listing) exist under ``root``."""

    def official_split(self, listing: pd.DataFrame, root: Path, **options) -> pd.Series:
        """The dataset's own split of ``listing`` ('train', 'val', 'test', or '' for a row it
        does not place), for ``split: official`` (``options``: the listing options, and the
        run's ``seed`` for a split the dataset defines by shares); adapters of datasets without
        one refuse."""
        raise SourceError(
            f"adapter {type(self).__name__} has no official split; give fractions, "
            "test_only or split files"
        )

    def release_aligned(self, paths: pd.Series) -> np.ndarray:
        """Per listed path (sources' ``path``), whether the image is one of the release's
        aligned face crops (:attr:`aligned_release`, for every image of the adapter)."""
        return np.full(len(paths), self.aligned_release, dtype=bool)

    def fake_references(self, fakes: pd.DataFrame, root: Path, **options) -> pd.DataFrame:
        """Where the dataset keeps, for each of its ``fakes`` (rows of its sources: image_id,
        path, method, target_subject and, for video frames, video_id and frame_index), the
        manipulation mask it released and the pristine video or image the fake was made
        from (:data:`~fairforge.columns.FAKE_REFERENCE_COLUMNS`; a file, a folder of frames
        or an image, '' where the dataset has none; a video's frame is the fake's
        ``frame_index`` in both). ``options`` are the listing options. A dataset that names
        neither gives '' for every fake, and its fakes have no mask."""
        return pd.DataFrame(
            {
                "image_id": fakes["image_id"].astype(str).to_numpy(object),
                "mask_file": "",
                "source_file": "",
            },
            columns=list(FAKE_REFERENCE_COLUMNS),
        )

    def imported_methods(self, name: str, dataset_cfg: Mapping) -> list[str] | None:
        """The manipulation methods of the fakes the dataset ships ([] for a dataset of real
        images; None when that cannot be told without listing it), which detectors may
        train on as they train on generated ones."""
        return []


ADAPTERS: Registry[type[SourceAdapter]] = Registry("adapter")


def list_adapters() -> list[str]:
    return ADAPTERS.names()


# --------------------------------------------------------------------------------- config


def configured_root(name: str, dataset_cfg: Mapping) -> Path:
    if not dataset_cfg.get("root"):
        raise ValueError(
            f"config: datasets.{name}: 'root' is required for adapter {dataset_cfg['adapter']!r}"
        )
    return Path(dataset_cfg["root"])


def count_csv_rows(path: str | Path) -> int:
    """Lines after the header: at least the records (a quoted field may span lines)."""
    with open(path, "rb") as fh:
        return max(0, sum(1 for _ in fh) - 1)


def image_root(root: str | Path) -> Path:
    """The folder that relative manifest paths start from (a csv file's folder for `csv`)."""
    root = Path(root)
    return root.parent if root.is_file() else root


# --------------------------------------------------------------------------------- listing

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def image_id_from_path(rel_path: str | os.PathLike) -> str:
    """A file-name-safe id from a relative path: folders joined by '__', image suffixes
    dropped (UTKFace's ``.jpg.chip.jpg`` drops both), other characters mapped to '_'."""
    p = PurePosixPath(Path(rel_path).as_posix())
    name = p.name
    while True:
        stem, ext = os.path.splitext(name)
        if ext.lower() in IMAGE_SUFFIXES or (ext.lower() == ".chip" and stem):
            name = stem
        else:
            break
    parts = [x for x in (*p.parent.parts, name) if x not in ("", ".", "/")]
    return "__".join(_UNSAFE.sub("_", x) for x in parts)


def relative_or_absolute(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` where it lies under it, else absolute (POSIX form):
    how a listing names a file that a csv may place anywhere."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def is_image_file(path: Path) -> bool:
    # Hidden files include macOS '._x.jpg' resource forks, which carry an image suffix.
    return path.suffix.lower() in IMAGE_SUFFIXES and not path.name.startswith(".")


def iter_images(folder: Path) -> list[Path]:
    """Image files below ``folder``, recursively, in a fixed (sorted) order."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found.extend(Path(dirpath) / f for f in sorted(filenames) if is_image_file(Path(f)))
    return sorted(found)


def subdirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def listing_row(
    image_id: str,
    path: str,
    subject_id: str,
    attributes: Mapping[str, object],
    ok: bool = True,
    reason: str = "",
) -> dict:
    return {
        "image_id": image_id,
        "path": path,
        "subject_id": str(subject_id),
        "attributes": dict(attributes),
        "ok": bool(ok),
        "reason": reason,
    }


REAL_METHOD = "real"


def labelled_row(
    row: dict,
    label: int,
    method: str = REAL_METHOD,
    source_subject: str = "",
    target_subject: str = "",
) -> dict:
    """``row`` (a :func:`listing_row`) with the :data:`LABEL_COLUMNS` of a labelled dataset:
    label 0 and method 'real' for a real image, label 1 and its manipulation for a fake."""
    return {
        **row,
        "label": int(label),
        "method": str(method),
        "source_subject": str(source_subject or ""),
        "target_subject": str(target_subject or ""),
    }


# Optional columns of a labelled csv (real and fake images or videos); not attributes.
CSV_LABEL_COLUMNS = ("label", "method", "source_subject", "target_subject")
_LABEL_WORDS = {"0": 0, "1": 1, "real": 0, "fake": 1}


def csv_label(label: str, method: str) -> tuple[int, str, str]:
    """(label, method, reason) of one csv row: ``label`` 0/1 (or real/fake), ``method`` the
    fake's manipulation ('real', or empty, for a real image). Either column alone suffices:
    a method other than 'real' makes a fake, a label 1 needs a method."""
    label, method = label.strip().lower(), method.strip()
    if not label:
        return (0 if method in ("", REAL_METHOD) else 1), method or REAL_METHOD, ""
    if label not in _LABEL_WORDS:
        return 0, method or REAL_METHOD, f"label must be 0/1 or real/fake, got {label!r}"
    value = _LABEL_WORDS[label]
    if value == 1 and method in ("", REAL_METHOD):
        return 1, method, "a fake (label 1) needs its method"
    if value == 0 and method not in ("", REAL_METHOD):
        return 0, method, f"a real image (label 0) has method {REAL_METHOD!r}, got {method!r}"
    return value, method or REAL_METHOD, ""


def with_csv_labels(row: dict, record: Mapping[str, str]) -> dict:
    """``row`` with the label columns of a labelled csv's ``record`` (:func:`csv_label`,
    ``source_subject`` and ``target_subject``); a usable row whose label and method
    disagree becomes ``ok=False`` with the reason."""
    label, method, bad = csv_label(record.get("label", ""), record.get("method", ""))
    if bad and row["ok"]:
        row = {**row, "ok": False, "reason": bad}
    return labelled_row(
        row,
        label,
        method,
        record.get("source_subject", "").strip(),
        record.get("target_subject", "").strip(),
    )


def csv_methods(csv: Path) -> list[str]:
    """The manipulation methods a labelled csv lists (its ``method`` column, 'real' left
    out; [] without one)."""
    table = pd.read_csv(csv, dtype=str, keep_default_na=False)
    if "method" not in table.columns:
        return []
    return sorted({m.strip() for m in table["method"]} - {"", REAL_METHOD})


def real_only(frame: pd.DataFrame) -> pd.DataFrame:
    """The real images of a listing or sources table (all of them where nothing is labelled):
    what forgeries are generated from."""
    if "label" not in frame.columns:
        return frame
    return frame.loc[frame["label"].to_numpy() != 1]


def listing_frame(rows: Iterable[dict]) -> pd.DataFrame:
    """The listing of ``rows``; :data:`LABEL_COLUMNS` follow when the rows carry labels."""
    rows = list(rows)
    labelled = any("label" in r for r in rows)
    columns = list(LISTING_COLUMNS) + (list(LABEL_COLUMNS) if labelled else [])
    frame = pd.DataFrame(rows, columns=columns)
    if labelled:
        frame["label"] = frame["label"].fillna(0).astype("int64")
        frame["method"] = frame["method"].fillna(REAL_METHOD).astype(object)
        for column in ("source_subject", "target_subject"):
            frame[column] = frame[column].fillna("").astype(object)
    return frame


def folder_listing(
    base: Path, root: Path, group_dirs: Mapping[Path, Mapping[str, str]]
) -> pd.DataFrame:
    """Rows for a ``{group}/{subject}/**/*.jpg`` tree; ids are relative to ``base``, paths to
    ``root`` (so ``{root}/data/{Race}`` and ``{root}/{Race}`` give the same ids)."""
    rows = []
    for group_dir, attributes in group_dirs.items():
        for subject_dir in subdirs(group_dir):
            for f in iter_images(subject_dir):
                rows.append(
                    listing_row(
                        image_id_from_path(f.relative_to(base)),
                        f.relative_to(root).as_posix(),
                        subject_dir.name,
                        attributes,
                    )
                )
    return listing_frame(rows)


def require_columns(table: pd.DataFrame, needed: Sequence[str], where: str) -> None:
    missing = [c for c in needed if c not in table.columns]
    if missing:
        raise SourceError(f"{where} lacks column(s) {missing}; it has {list(table.columns)}")
