"""Celeb-DF v2 (``celebdf``) in its released layout.

::

    {root}/Celeb-real/id0_0000.mp4            a celebrity's interview (identity id0)
    {root}/YouTube-real/00000.mp4             an extra real video (its own subject)
    {root}/Celeb-synthesis/id0_id16_0000.mp4  target id0 with the face of id16
    {root}/List_of_testing_videos.txt         "1 YouTube-real/00170.mp4", "0 Celeb-synthesis/..."

Every fake has method ``Celeb-synthesis``. ``split: official`` is the dataset's protocol: the
videos of the test list are test, the others train. The list is not subject-disjoint (its
videos show most of the 59 celebrities, whose other videos are for training), so the official
split is taken as published unless the config sets ``split.subject_disjoint: true``, which
voids every training video that shows a test identity. The dataset has no validation split:
``split.val_from_train`` carves one out of the train part (Assessment §5.1: 80% train, 20%
val). Celeb-DF ships no demographic labels: ``options.attributes`` names a csv with an ``id``
column (``id0_0000``, a YouTube-real ``00000``, or an identity ``id0``) and attribute columns;
a fake without its own row takes its target identity's (its row, else the first listed real
video of it). Without the csv every video is in group ``all``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import pandas as pd

from fairforge.sources.base import ADAPTERS, REAL_METHOD, SourceError
from fairforge.sources.videos import (
    LabelledVideoDataset,
    attributes_for,
    find_items,
    read_attributes,
    video_row,
)

CELEBDF_METHOD = "Celeb-synthesis"
CELEBDF_TEST_LIST = "List_of_testing_videos.txt"
_CELEB_REAL = re.compile(r"^(id\d+)_\d+$")
_CELEB_FAKE = re.compile(r"^(id\d+)_(id\d+)_\d+$")


def identity_videos(annotations: Mapping[str, dict], identity: str) -> list[str]:
    """The rows of an attributes csv that name a real Celeb-DF video of ``identity``
    (``id0_0000`` for ``id0``), in order: where a fake or an unlisted video of that
    identity finds its attributes when the csv lists videos, not identities."""
    return sorted(k for k in annotations if (m := _CELEB_REAL.match(k)) and m.group(1) == identity)


def read_test_list(path: Path) -> set[str]:
    """Video ids (``{folder}_{name}``) of a Celeb-DF test list: lines ``label folder/name.mp4``."""
    tested = set()
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts:
            rel = Path(parts[-1])
            tested.add(f"{rel.parent.name}_{rel.stem}")
    return tested


@ADAPTERS.register("celebdf")
class CelebDF(LabelledVideoDataset):
    """Celeb-DF v2 in its released layout (module docstring); options ``attributes``,
    ``test_list`` (default List_of_testing_videos.txt), ``frames_per_video``."""

    # Each kind's folder; a release that names one otherwise lists the other names after it.
    CELEB_REAL: ClassVar[Sequence[str]] = ("Celeb-real",)
    YOUTUBE_REAL: ClassVar[Sequence[str]] = ("YouTube-real",)
    SYNTHESIS: ClassVar[Sequence[str]] = ("Celeb-synthesis",)
    TEST_LISTS: ClassVar[Sequence[str]] = (CELEBDF_TEST_LIST,)
    # The test list shows identities that training videos show too (module docstring).
    official_subject_disjoint = False

    def folders(self, dataset: Path) -> list[tuple[str, str]]:
        """(kind, folder name) of each kind of video present: the first of its names."""
        found = []
        for kind, names in (
            ("real", self.CELEB_REAL),
            ("youtube", self.YOUTUBE_REAL),
            ("fake", self.SYNTHESIS),
        ):
            name = next((n for n in names if (dataset / n).is_dir()), None)
            if name is not None:
                found.append((kind, name))
        return found

    def videos(
        self, dataset: Path, *, attributes: str | None = None, test_list: str | None = None
    ) -> pd.DataFrame:
        notes = read_attributes(attributes, dataset)
        rows = []
        for kind, folder in self.folders(dataset):
            for vid, path in find_items(dataset / folder).items():
                if kind == "youtube":
                    subject = f"youtube_{vid}"
                    rows.append(
                        video_row(
                            f"{folder}_{vid}", path, subject, attributes_for(notes, vid, vid), 0
                        )
                    )
                    continue
                m = (_CELEB_REAL if kind == "real" else _CELEB_FAKE).match(vid)
                reason = "" if m else f"unexpected {folder} name {vid!r}"
                target = m.group(1) if m else vid
                source = m.group(2) if m and kind == "fake" else ""
                label, method = (1, CELEBDF_METHOD) if kind == "fake" else (0, REAL_METHOD)
                rows.append(
                    video_row(
                        f"{folder}_{vid}",
                        path,
                        target,
                        attributes_for(notes, vid, target, *identity_videos(notes, target)),
                        label,
                        method,
                        source,
                        target if label else "",
                        reason,
                    )
                )
        if not rows:
            names = [*self.CELEB_REAL, *self.YOUTUBE_REAL, *self.SYNTHESIS]
            raise SourceError(f"no Celeb-DF folders ({', '.join(names)}) under {dataset}")
        return pd.DataFrame(rows)

    def imported_methods(self, name: str, dataset_cfg: Mapping) -> list[str] | None:
        return [CELEBDF_METHOD]

    def official_split(self, listing: pd.DataFrame, root: Path, **options) -> pd.Series:
        dataset = Path(options.get("folder") or root)
        names = [options["test_list"]] if options.get("test_list") else list(self.TEST_LISTS)
        path = next((dataset / n for n in names if (dataset / n).is_file()), dataset / names[0])
        if not path.is_file():
            raise SourceError(f"Celeb-DF test list not found: {path}")
        tested = read_test_list(path)
        if not tested & set(listing["video_id"]):
            raise SourceError(
                f"Celeb-DF test list {path} names none of the {len(listing)} listed videos "
                "(expected lines such as '1 Celeb-real/id0_0000.mp4')"
            )
        return listing["video_id"].map(lambda v: "test" if v in tested else "train").astype(object)
