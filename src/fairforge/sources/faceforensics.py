"""FaceForensics++ (``faceforensics``) in its released layout.

::

    {root}/original_sequences/youtube/{compression}/videos/000.mp4        (or images/000/*.png)
    {root}/manipulated_sequences/{method}/{compression}/videos/000_003.mp4  (or images/000_003/)
    {root}/splits/{train,val,test}.json                                 [["000", "003"], ...]

``compression`` is raw, c23 or c40; the methods are Deepfakes, Face2Face, FaceSwap,
NeuralTextures and FaceShifter. A fake ``000_003`` is target video 000 with the face (or the
expressions) of 003; its subject is 000. ``split: official`` reads the released json files
(``[[id1, id2], ...]``) from ``options.splits`` (default ``{root}/splits``). The masks FF++
released (``manipulated_sequences/{method}/masks/videos/000_003.mp4``, where downloaded) and
the target video 000 each fake was made from are each fake's references for mask-supervised
training (:meth:`FaceForensics.fake_references`). FaceForensics++
ships no demographic labels: ``options.attributes`` names a csv with an ``id`` column
(``000``, ``000_003``) and attribute columns; a fake without its own row takes its target's.
Without it every video has ``group: all``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from fairforge.sources.base import ADAPTERS, SourceError
from fairforge.sources.split import SPLITS
from fairforge.sources.videos import (
    LabelledVideoDataset,
    attributes_for,
    find_items,
    read_attributes,
    video_row,
)

FF_METHODS = ("Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures", "FaceShifter")
FF_COMPRESSIONS = ("raw", "c23", "c40")
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
        for split in SPLITS:
            path = folder / f"{split}.json"
            if not path.is_file():
                raise SourceError(f"FaceForensics++ split file not found: {path}")
            # [[id1, id2], ...], ids as strings ('000'): read as JSON, never as numbers.
            for pair in json.loads(path.read_text()):
                for vid in pair if isinstance(pair, list) else [pair]:
                    owner[str(vid)] = split
        return listing["subject_id"].astype(str).map(owner).fillna("").astype(object)
