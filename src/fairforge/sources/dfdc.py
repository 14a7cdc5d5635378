"""The DeepFake Detection Challenge dataset (``dfdc``) in its released layout.

::

    {root}/dfdc_train_part_0/metadata.json    {"abc.mp4": {"label": "FAKE", "original": "xyz.mp4"}}
    {root}/dfdc_train_part_0/abc.mp4

DFDC ships no demographic labels: ``options.attributes`` names a csv with an ``id`` column
(a video's file name without ``.mp4``) and attribute columns; a fake without its own row
takes its original's. Without it every video has ``group: all``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from fairforge.sources.base import ADAPTERS, REAL_METHOD, SourceError
from fairforge.sources.split import most_frames
from fairforge.sources.videos import (
    DEFAULT_FRAMES_PER_VIDEO,
    LabelledVideoDataset,
    attributes_for,
    find_items,
    read_attributes,
    video_row,
)

DFDC_METHOD = "DFDC"
DFDC_METADATA = "metadata.json"
DFDC_LABELS = {"REAL": 0, "FAKE": 1}


def dfdc_parts(dataset: Path, parts: Sequence[str] | None = None) -> list[Path]:
    """The folders of a DFDC release that hold a ``metadata.json``: ``parts`` (names under
    ``dataset``), else ``dataset`` itself when it holds one, else each of its subfolders that
    does (``dfdc_train_part_0`` ...)."""
    if parts is not None:
        folders = [dataset / p for p in parts]
        missing = [str(f / DFDC_METADATA) for f in folders if not (f / DFDC_METADATA).is_file()]
        if missing:
            raise SourceError(f"DFDC metadata not found: {missing}")
        return folders
    if (dataset / DFDC_METADATA).is_file():
        return [dataset]
    folders = (
        [d for d in sorted(dataset.iterdir()) if d.is_dir() and (d / DFDC_METADATA).is_file()]
        if dataset.is_dir()
        else []
    )
    if not folders:
        raise SourceError(
            f"no DFDC metadata.json in {dataset} or its part folders (dfdc_train_part_0/...)"
        )
    return folders


def read_dfdc_metadata(folder: Path) -> dict[str, dict]:
    path = folder / DFDC_METADATA
    try:
        entries = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise SourceError(f"DFDC metadata {path} is not JSON: {err}") from None
    if not isinstance(entries, dict):
        raise SourceError(f"DFDC metadata {path}: expected an object of file name -> labels")
    return entries


@ADAPTERS.register("dfdc")
class DFDC(LabelledVideoDataset):
    """The DeepFake Detection Challenge dataset in its released layout: part folders
    (``dfdc_train_part_0/`` ...), each with its videos and a ``metadata.json`` mapping a file
    name to ``{"label": "REAL" | "FAKE", "original": "<real video>.mp4" | null, "split":
    ...}``. A fake's subject is its original video (DFDC names no actors), so a fake and its
    original share a split; every fake has method ``DFDC``. Options ``parts`` (default: every
    part folder), ``attributes`` (a csv with ``id``: the video's name without ``.mp4``; a
    fake without a row takes its original's), ``frames_per_video``. A listed video that is
    missing, a label other than REAL/FAKE or a fake without its original stays as a row with
    ``ok=False`` and the reason."""

    def count_items(self, name: str, dataset_cfg: Mapping) -> int:
        options = self.listing_options(name, dataset_cfg)
        n = most_frames(options.get("frames_per_video"), DEFAULT_FRAMES_PER_VIDEO)
        parts = dfdc_parts(Path(options["folder"]), options.get("parts"))
        return sum(len(read_dfdc_metadata(p)) for p in parts) * n

    def videos(
        self,
        dataset: Path,
        *,
        parts: Sequence[str] | None = None,
        attributes: str | None = None,
    ) -> pd.DataFrame:
        notes = read_attributes(attributes, dataset)
        rows = []
        for folder in dfdc_parts(dataset, parts):
            items = find_items(folder)
            for name, entry in sorted(read_dfdc_metadata(folder).items()):
                vid = Path(name).stem
                entry = entry if isinstance(entry, dict) else {}
                label = DFDC_LABELS.get(str(entry.get("label", "")).upper())
                original = Path(str(entry.get("original") or "")).stem
                reason = ""
                if label is None:
                    reason = f"DFDC label must be REAL or FAKE, got {entry.get('label')!r}"
                elif label == 1 and not original:
                    reason = "a DFDC fake without its original"
                subject = original if label == 1 and original else vid
                rows.append(
                    video_row(
                        vid,
                        items.get(vid),
                        subject,
                        attributes_for(notes, vid, subject),
                        1 if label == 1 else 0,
                        DFDC_METHOD if label == 1 else REAL_METHOD,
                        "",
                        subject if label == 1 else "",
                        reason,
                    )
                )
        return pd.DataFrame(rows)

    def imported_methods(self, name: str, dataset_cfg: Mapping) -> list[str] | None:
        return [DFDC_METHOD]
