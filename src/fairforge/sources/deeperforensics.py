"""DeeperForensics-1.0 (``deeperforensics``) in its released layout: DF-VAE's end-to-end
fakes on FaceForensics++'s target videos, with the actors' recordings (the class docstring
has the folders)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.sources.base import ADAPTERS, SourceError
from fairforge.sources.split import SPLITS
from fairforge.sources.videos import (
    UNANNOTATED,
    VIDEO_SUFFIXES,
    LabelledVideoDataset,
    find_items,
    read_attributes,
    video_row,
)

DFR_VARIANTS = (
    "end_to_end",
    *(f"end_to_end_level_{i}" for i in range(1, 6)),
    "end_to_end_random_level",
    *(f"end_to_end_mix_{j}_distortions" for j in range(2, 5)),
    "reenact_postprocess",
)
_DFR_FAKE = re.compile(r"^(\d{3})_([MW])(\d)(\d\d)$")
_DFR_ACTOR = re.compile(r"^([MW])(\d)(\d\d)$")
DFR_GENDER = {"M": "male", "W": "female"}


def actor_gender(actor: str) -> str | None:
    """A DeeperForensics actor's gender from the ID's letter (M004: male, W101: female)."""
    m = _DFR_ACTOR.match(actor)
    return DFR_GENDER[m.group(1)] if m else None


@ADAPTERS.register("deeperforensics")
class DeeperForensics(LabelledVideoDataset):
    """DeeperForensics-1.0 in its released layout:

    - fakes ``manipulated_videos/{variant}/{target}_{actor}.mp4`` (DF-VAE's swap of actor
      ``M004``/``W101``'s face onto FaceForensics++ target video ``000``); ``variants`` picks
      the folders (default ``[end_to_end]``; also ``end_to_end_level_1``..``5``,
      ``end_to_end_random_level``, ``end_to_end_mix_{2,3,4}_distortions``,
      ``reenact_postprocess``), each one a method named as its folder;
    - reals: the target videos, which the release does not ship (FaceForensics++'s c23
      ``original_sequences/youtube/c23/videos``): option ``targets``, a folder of ``000.mp4``
      (or frame folders), relative to the dataset root or absolute; and, with
      ``source_videos: true``, the actors' recordings ``source_videos/{actor}/**/*.mp4``;
    - ``lists/splits/{train,val,test}.txt``: fake video names, for ``split: official`` (a
      target video or an actor takes the split of its fakes).

    A fake's subject is its target video, its source the actor. Swaps are made within gender,
    so the actor's ID letter (M, W) gives the ``gender`` of the fake, of its target video and
    of the actor's recordings; ``attributes`` (a csv with ``id``: ``000``, ``000_M004`` or
    ``M004``) adds or overrides attributes."""

    default_group_by = ("gender",)

    def videos(
        self,
        dataset: Path,
        *,
        variants: Sequence[str] = ("end_to_end",),
        targets: str | None = None,
        source_videos: bool = False,
        attributes: str | None = None,
        splits: str | None = None,
    ) -> pd.DataFrame:
        unknown = sorted(set(variants) - set(DFR_VARIANTS))
        if unknown:
            raise SourceError(
                f"unknown DeeperForensics-1.0 variant(s) {unknown}; known: {list(DFR_VARIANTS)}"
            )
        notes = read_attributes(attributes, dataset)

        def attrs(own: str, gender: str | None, *others: str) -> dict:
            out = {"gender": gender} if gender else {}
            for key in (*others[::-1], own):
                out.update(notes.get(key) or {})
            return out or dict(UNANNOTATED)

        rows, target_gender = [], {}
        for variant in variants:
            fakes = find_items(dataset / "manipulated_videos" / variant)
            if not fakes:
                raise SourceError(
                    f"no DeeperForensics-1.0 fakes under {dataset}/manipulated_videos/{variant}"
                )
            for vid, path in fakes.items():
                m = _DFR_FAKE.match(vid)
                target, actor = (m.group(1), vid.split("_", 1)[1]) if m else (vid, "")
                gender = actor_gender(actor)
                if gender:
                    target_gender.setdefault(target, gender)
                rows.append(
                    video_row(
                        f"{variant}_{vid}",
                        path,
                        target,
                        attrs(vid, gender, target, actor),
                        1,
                        variant,
                        actor,
                        target,
                        "" if m else "fake name is not {target}_{actor} (000_M004)",
                    )
                )
        n_fakes = len(rows)
        if targets:
            folder = Path(targets) if Path(targets).is_absolute() else dataset / targets
            for vid, path in find_items(folder).items():
                known = vid in target_gender or vid in notes
                why = "" if known else "target video without fakes: gender unknown (attributes)"
                rows.append(
                    video_row(
                        f"target_{vid}",
                        path,
                        vid,
                        attrs(vid, target_gender.get(vid)),
                        0,
                        reason=why,
                    )
                )
        if source_videos:
            for actor_dir in sorted((dataset / "source_videos").glob("*")):
                gender = actor_gender(actor_dir.name)
                if not actor_dir.is_dir() or gender is None:
                    continue
                for path in sorted(actor_dir.rglob("*")):
                    if path.suffix.lower() in VIDEO_SUFFIXES and not path.name.startswith("."):
                        rows.append(
                            video_row(
                                f"source_{path.stem}",
                                path,
                                actor_dir.name,
                                attrs(actor_dir.name, gender),
                                0,
                            )
                        )
        if len(rows) == n_fakes:
            raise SourceError(
                "DeeperForensics-1.0 ships no real videos: give options.targets (the "
                "FaceForensics++ c23 target videos) and/or source_videos: true; found none"
            )
        return pd.DataFrame(rows)

    def imported_methods(self, name: str, dataset_cfg: Mapping) -> list[str] | None:
        return list((dataset_cfg.get("options") or {}).get("variants") or ["end_to_end"])

    def official_split(self, listing: pd.DataFrame, root: Path, **options) -> pd.Series:
        dataset = Path(options.get("folder") or root)
        folder = options.get("splits") or "lists/splits"
        folder = Path(folder) if Path(folder).is_absolute() else dataset / folder
        by_fake: dict[str, str] = {}
        for split in SPLITS:
            path = folder / f"{split}.txt"
            if not path.is_file():
                raise SourceError(f"DeeperForensics-1.0 split file not found: {path}")
            for line in path.read_text().splitlines():
                if line.strip():
                    by_fake.setdefault(Path(line.strip()).stem, split)
        # A target video or an actor takes the split of its fakes (the first in test, val,
        # train order: drop_overlaps then keeps the others' rows unusable, with why).
        by_subject: dict[str, str] = {}
        for split in ("test", "val", "train"):
            for fake, s in by_fake.items():
                if s == split:
                    for subject in fake.split("_", 1):
                        by_subject.setdefault(subject, split)
        fake = listing["label"].to_numpy() == 1
        names = listing["video_id"].astype(str).str.split("_").str[-2:].str.join("_")
        return pd.Series(
            np.where(
                fake,
                names.map(by_fake).fillna("").to_numpy(object),
                listing["subject_id"].astype(str).map(by_subject).fillna("").to_numpy(object),
            ),
            index=listing.index,
            dtype=object,
        )
