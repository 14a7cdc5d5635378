"""Adapters for the papers' labelled video datasets, in their released folder layouts, and
the frame sampler that every labelled video adapter lists its frames with
(:func:`labelled_video_listing`, registered on
:data:`~fairforge.sources.videos.FRAME_SAMPLERS`).

Each lists real and fake videos with their label and manipulation method (an approach of the
fairness metrics) and, for fakes, the identities they were made from; a video is sampled into
``frames_per_video`` evenly spaced frames, from the video file (decoded into
``{results}/{dataset}/video_source/frames``, as the ``video`` adapter does) or from a folder
of frames already extracted under the same name (``000/0000.png`` ...; kept where they are).

- ``faceforensics`` (FaceForensics++): ``original_sequences/youtube/{compression}/videos/
  000.mp4`` and ``manipulated_sequences/{method}/{compression}/videos/000_003.mp4`` (or
  ``.../images/000_003/*.png``), ``compression`` raw, c23 or c40; methods Deepfakes,
  Face2Face, FaceSwap, NeuralTextures, FaceShifter. A fake ``000_003`` is target video 000
  with the face (or expressions) of 003; its subject is 000. ``split: official`` reads the
  released ``{train,val,test}.json`` (``[[id1, id2], ...]``) from ``options.splits``
  (default ``{root}/splits``). The masks FF++ released (``manipulated_sequences/{method}/
  masks/videos/000_003.mp4``, where downloaded) and the target video 000 each fake was made
  from are each fake's references for mask-supervised training
  (:meth:`FaceForensics.fake_references`).
- ``dfdc``, ``deeperforensics``: the DeepFake Detection Challenge's part folders with their
  ``metadata.json``, and DeeperForensics-1.0's manipulated videos with the
  FaceForensics++ target videos they were made on (their classes' docstrings).

The adapters added since (Celeb-DF v1 and v2, UADFV, DF-TIMIT, ForgeryNet) are one file each
in :mod:`fairforge.sources`: they only read layouts, and sample their frames here.

FaceForensics++ and DFDC ship no demographic labels: ``options.attributes`` names a
csv with an ``id`` column (a video id as the dataset names it: ``000``, ``000_003``, a DFDC
file name) and attribute columns; a fake without its own row takes its target's. Without it
every video has ``group: all``. A listed video that is missing or unreadable stays as a row with ``ok=False``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.columns import VIDEO_LISTING_COLUMNS
from fairforge.sources.base import ADAPTERS, REAL_METHOD, SourceError, is_image_file, listing_row
from fairforge.sources.split import even_positions, most_frames
from fairforge.sources.videos import (
    DEFAULT_FRAMES_PER_VIDEO,
    FRAME_SAMPLER,
    FRAME_SAMPLERS,
    UNANNOTATED,
    VIDEO_SUFFIXES,
    LabelledVideoDataset,
    attributes_for,
    find_items,
    frame_files,
    read_attributes,
    video_row,
)
from fairforge.video.frames import frame_image_id, frame_listing, with_video_labels


def labelled_video_listing(
    videos: pd.DataFrame, root: Path, frames_per_video: int, workers: int | None = None
) -> pd.DataFrame:
    """Frame rows of ``videos`` (video_id, path, subject_id, attributes, label, method,
    source_subject, target_subject, ok, reason): files are decoded into ``root/frames``, frame
    folders sampled in place, a single image is a one-frame video kept in place; label columns
    follow each frame."""
    in_place = [Path(p).is_dir() or is_image_file(Path(p)) for p in videos["path"]]
    parts = []
    files = videos.loc[[not f for f in in_place]]
    if len(files):
        parts.append(frame_listing(files, root, n_frames=frames_per_video, workers=workers))
    rows = []
    for rec in videos.loc[in_place].to_dict("records"):
        path = Path(rec["path"])
        frames = frame_files(path) if path.is_dir() else [path]
        video_id, subject = rec["video_id"], rec["subject_id"]
        if not frames or not rec["ok"]:
            reason = rec["reason"] or f"no frames in {rec['path']}"
            row = listing_row(video_id, rec["path"], subject, rec["attributes"], False, reason)
            rows.append({**row, "video_id": video_id, "frame_index": -1, "video_path": rec["path"]})
            continue
        for i in even_positions(len(frames), frames_per_video):
            row = listing_row(
                frame_image_id(video_id, i), frames[i].as_posix(), subject, rec["attributes"]
            )
            # the folder is the video: its frames in order, frame_index counting them
            rows.append({**row, "video_id": video_id, "frame_index": i, "video_path": rec["path"]})
    if rows:
        parts.append(pd.DataFrame(rows, columns=list(VIDEO_LISTING_COLUMNS)))
    listing = pd.concat(parts, ignore_index=True) if parts else None
    if listing is None or listing.empty:
        raise SourceError(f"no videos or frame folders found for {root}")
    listing = with_video_labels(listing, videos)
    listing["frame_index"] = listing["frame_index"].astype("int64")
    return listing.sort_values("image_id", kind="mergesort").reset_index(drop=True)


# The labelled video adapters (here and in fairforge.sources) sample their frames with it.
FRAME_SAMPLERS.register(FRAME_SAMPLER, labelled_video_listing)


# ------------------------------------------------------------------------- FaceForensics++

FF_METHODS = ("Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures", "FaceShifter")
FF_COMPRESSIONS = ("raw", "c23", "c40")
FF_SPLITS = ("train", "val", "test")
_FF_FAKE = re.compile(r"^(\d+)_(\d+)$")


def ff_folder(dataset: Path, kind: str, compression: str) -> dict[str, Path]:
    """Items of one FaceForensics++ sequence folder: its ``images`` frame folders over its
    ``videos`` files."""
    base = dataset / kind / compression
    return {**find_items(base / "videos"), **find_items(base / "images")}


@ADAPTERS.register("faceforensics")
class FaceForensics(LabelledVideoDataset):
    """FaceForensics++ in its released layout (module docstring); options ``compression``
    (raw | c23 | c40, default c23), ``methods`` (default all five present), ``attributes``,
    ``splits``, ``frames_per_video``."""

    def videos(
        self,
        dataset: Path,
        *,
        compression: str = "c23",
        methods: Sequence[str] | None = None,
        attributes: str | None = None,
        splits: str | None = None,
    ) -> pd.DataFrame:
        if compression not in FF_COMPRESSIONS:
            raise SourceError(
                f"FaceForensics++ compression {compression!r}: expected one of {FF_COMPRESSIONS}"
            )
        reals = ff_folder(dataset, "original_sequences/youtube", compression)
        if not reals:
            raise SourceError(
                f"no FaceForensics++ originals under {dataset}/original_sequences/youtube/"
                f"{compression}/(videos|images)"
            )
        wanted = list(methods) if methods is not None else list(FF_METHODS)
        unknown = sorted(set(wanted) - set(FF_METHODS))
        if unknown:
            raise SourceError(f"unknown FaceForensics++ method(s) {unknown}; known: {FF_METHODS}")
        notes = read_attributes(attributes, dataset)
        rows = [
            video_row(f"youtube_{vid}", path, vid, attributes_for(notes, vid, vid), 0)
            for vid, path in reals.items()
        ]
        for method in wanted:
            fakes = ff_folder(dataset, f"manipulated_sequences/{method}", compression)
            if not fakes and methods is not None:
                raise SourceError(
                    f"FaceForensics++ method {method} not found under "
                    f"{dataset}/manipulated_sequences/{method}/{compression}"
                )
            for vid, path in fakes.items():
                m = _FF_FAKE.match(vid)
                target, source = (m.group(1), m.group(2)) if m else (vid, "")
                reason = "" if m else "fake name is not {target}_{source}"
                rows.append(
                    video_row(
                        f"{method}_{vid}",
                        path,
                        target,
                        attributes_for(notes, vid, target),
                        1,
                        method,
                        source,
                        target,
                        reason,
                    )
                )
        return pd.DataFrame(rows)

    def imported_methods(self, name: str, dataset_cfg: Mapping) -> list[str] | None:
        return list((dataset_cfg.get("options") or {}).get("methods") or FF_METHODS)

    def fake_references(
        self, fakes: pd.DataFrame, root: Path, *, folder=None, compression="c23", **options
    ) -> pd.DataFrame:
        """Each fake's released mask video, ``masks/videos/{name}`` of its method (or a
        ``masks/images/{name}`` frame folder), named as the fake; and its source: the
        original of the fake's *target*, ``000`` of ``000_003``, frame for frame: FF++'s
        Deepfakes script converts the frames of the first video of a pair and names the result
        after the pair (``create_from_models`` in the FaceForensics repository's
        ``dataset/DeepFakes/deepfakes.py``)."""
        dataset = Path(folder or root)
        reals = ff_folder(dataset, "original_sequences/youtube", compression)
        methods = fakes["method"].astype(str)
        masks = {m: ff_folder(dataset, f"manipulated_sequences/{m}", "masks") for m in set(methods)}
        names = [vid[len(m) + 1 :] for vid, m in zip(fakes["video_id"].astype(str), methods)]
        return pd.DataFrame(
            {
                "image_id": fakes["image_id"].astype(str).to_numpy(object),
                "mask_file": [str(masks[m].get(n, "")) for m, n in zip(methods, names)],
                "source_file": [str(reals.get(str(t), "")) for t in fakes["target_subject"]],
            }
        )

    def official_split(self, listing: pd.DataFrame, root: Path, **options) -> pd.Series:
        dataset = Path(options.get("folder") or root)
        folder = options.get("splits") or "splits"
        folder = Path(folder) if Path(folder).is_absolute() else dataset / folder
        owner: dict[str, str] = {}
        for split in FF_SPLITS:
            path = folder / f"{split}.json"
            if not path.is_file():
                raise SourceError(f"FaceForensics++ split file not found: {path}")
            # [[id1, id2], ...], ids as strings ('000'): read as JSON, never as numbers.
            for pair in json.loads(path.read_text()):
                for vid in pair if isinstance(pair, list) else [pair]:
                    owner[str(vid)] = split
        return listing["subject_id"].astype(str).map(owner).fillna("").astype(object)


# ------------------------------------------------------------------------------------ DFDC

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


# --------------------------------------------------------------------- DeeperForensics-1.0

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
        for split in FF_SPLITS:
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
