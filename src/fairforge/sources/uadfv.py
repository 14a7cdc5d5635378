"""UADFV (``uadfv``) in its released layout: 49 real videos, each with one fake made from it
with FakeApp (Benchmark §2).

::

    {root}/real/0000.mp4        a real video; each shows its own person
    {root}/fake/0000_fake.mp4   the fake made from real 0000

A video may also be a folder of its frames under the same name. The fakes have method
``UADFV``. A fake shows its real video's person with a face the release does not name, so its
subject (and target) is its real video's number, and a fake and its real video fall in one
split. UADFV has no official split: the Benchmark's is video-level 3:1:1 (Table 1), which is
``split: "3:1:1"`` (by subject, each pair kept together) or, to split real and fake videos
apart, ``{train: .6, val: .2, test: .2, subject_disjoint: false}``. ``options.attributes``
names a csv with an ``id`` column (``0000``; a fake without its own row takes its real's)
and attribute columns; without it every video is in group ``all``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from fairforge.sources.base import ADAPTERS, SourceError
from fairforge.sources.videos import (
    LabelledVideoDataset,
    attributes_for,
    find_items,
    read_attributes,
    video_row,
)

UADFV_METHOD = "UADFV"
_UADFV_REAL = re.compile(r"^\d+$")
_UADFV_FAKE = re.compile(r"^(\d+)_fake$")


@ADAPTERS.register("uadfv")
class UADFV(LabelledVideoDataset):
    """UADFV in its released layout (module docstring); options ``attributes``,
    ``frames_per_video``."""

    def videos(self, dataset: Path, *, attributes: str | None = None) -> pd.DataFrame:
        notes = read_attributes(attributes, dataset)
        rows = []
        for vid, path in find_items(dataset / "real").items():
            reason = "" if _UADFV_REAL.match(vid) else f"unexpected UADFV real name {vid!r}"
            attrs = attributes_for(notes, vid)
            rows.append(video_row(f"real_{vid}", path, vid, attrs, 0, reason=reason))
        for vid, path in find_items(dataset / "fake").items():
            m = _UADFV_FAKE.match(vid)
            subject = m.group(1) if m else vid
            reason = "" if m else f"unexpected UADFV fake name {vid!r} (expected 0000_fake)"
            attrs = attributes_for(notes, vid, subject)
            rows.append(
                video_row(f"fake_{vid}", path, subject, attrs, 1, UADFV_METHOD, "", subject, reason)
            )
        if not rows:
            raise SourceError(f"no UADFV videos under {dataset}/real or {dataset}/fake")
        return pd.DataFrame(rows)

    def imported_methods(self, name: str, dataset_cfg: Mapping) -> list[str] | None:
        return [UADFV_METHOD]
