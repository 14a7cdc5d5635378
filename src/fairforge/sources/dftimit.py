"""DeepfakeTIMIT (``dftimit``) in its released layout, with the VidTIMIT recordings it was made
from as its real videos.

::

    {root}/higher_quality/fadg0/sa1-video-fram1.avi    fadg0's recording of sentence sa1
    {root}/lower_quality/fadg0/sa1-video-fram1.avi     with fram1's face (faceswap-GAN)
    {vidtimit}/fadg0/video/sa1/001, 002, ...           VidTIMIT: JPEG frames without a suffix
    {vidtimit}/fadg0/sa1.avi                           (or the recordings as video files)

DeepfakeTIMIT swaps the faces of 16 pairs of look-alike VidTIMIT subjects, both ways, at two
qualities (64 px and 128 px faces), ten sentences each: 320 fakes per quality. A fake's
subject (and target) is the folder's person, whose recording and voice it keeps; its source is
the person after ``-video-``, whose face it shows. ``qualities`` picks the folders (default
``[higher]``, the Benchmark's DF-TIMIT (higher quality), §3.1.1; ``[higher, lower]`` for
both), each a method: ``DF-TIMIT-HQ``, ``DF-TIMIT-LQ``.

The release ships no real videos: ``vidtimit`` (required) is the VidTIMIT folder, relative to
the root or absolute; the sentence recordings of the subjects the fakes show are listed (not
the head-rotation sequences ``head``, ``head2``, ``head3``). A VidTIMIT subject id starts with
its gender (``f``, ``m``), which gives ``gender`` to its recordings and to the fakes of it
(default ``group_by: [gender]``); ``attributes`` (a csv with ``id``: a subject ``fadg0`` or a
video id) adds or overrides attributes. There is no official split: the Benchmark's is
video-level 3:1:1 (Table 1), ``split: "3:1:1"`` by subject (a pair's swaps and recordings
kept together).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from fairforge.sources.base import ADAPTERS, SourceError
from fairforge.sources.videos import LabelledVideoDataset, find_items, read_attributes, video_row

DFTIMIT_QUALITIES = {
    "higher": ("higher_quality", "DF-TIMIT-HQ"),
    "lower": ("lower_quality", "DF-TIMIT-LQ"),
}
_DFTIMIT_FAKE = re.compile(r"^(\w+)-video-(\w+)$")
_VIDTIMIT_SUBJECT = re.compile(r"^([fm])[a-z]{3}\d$")
VIDTIMIT_GENDER = {"f": "female", "m": "male"}
# VidTIMIT's head-rotation sequences, recorded next to the sentences; no fake is made of them.
_HEAD_SEQUENCE = re.compile(r"^head\d*$")


def vidtimit_gender(subject: str) -> str | None:
    m = _VIDTIMIT_SUBJECT.match(subject)
    return VIDTIMIT_GENDER[m.group(1)] if m else None


def vidtimit_recordings(folder: Path) -> dict[str, Path]:
    """Sentence -> recording of one VidTIMIT subject: its ``video/{sentence}`` frame folders
    over video files ``{sentence}.avi`` next to them; head-rotation sequences left out."""
    files = {name: p for name, p in find_items(folder).items() if p.is_file()}
    frames = find_items(folder / "video")
    return {n: p for n, p in {**files, **frames}.items() if not _HEAD_SEQUENCE.match(n)}


@ADAPTERS.register("dftimit")
class DFTIMIT(LabelledVideoDataset):
    """DeepfakeTIMIT in its released layout with VidTIMIT's recordings (module docstring);
    options ``vidtimit``, ``qualities``, ``attributes``, ``frames_per_video``."""

    default_group_by = ("gender",)

    def videos(
        self,
        dataset: Path,
        *,
        vidtimit: str | None = None,
        qualities: Sequence[str] = ("higher",),
        attributes: str | None = None,
    ) -> pd.DataFrame:
        unknown = sorted(set(qualities) - set(DFTIMIT_QUALITIES))
        if unknown or not qualities:
            raise SourceError(
                f"DF-TIMIT qualities {list(qualities)}: expected some of {list(DFTIMIT_QUALITIES)}"
            )
        if not vidtimit:
            raise SourceError(
                "DF-TIMIT ships no real videos: give options.vidtimit, the VidTIMIT folder "
                "({vidtimit}/fadg0/video/sa1/001 ...)"
            )
        notes = read_attributes(attributes, dataset)

        def attrs(*keys: str) -> dict:
            gender = vidtimit_gender(keys[0])
            out = {"gender": gender} if gender else {}
            for key in keys:
                out.update(notes.get(key) or {})
            return out

        rows, shown = [], set()
        for quality in qualities:
            folder, method = DFTIMIT_QUALITIES[quality]
            subjects = [d for d in sorted((dataset / folder).glob("*")) if d.is_dir()]
            if not subjects:
                raise SourceError(f"no DF-TIMIT subject folders under {dataset / folder}")
            for subject_dir in subjects:
                target = subject_dir.name
                for name, path in find_items(subject_dir).items():
                    m = _DFTIMIT_FAKE.match(name)
                    source = m.group(2) if m else ""
                    why = "" if m else f"unexpected DF-TIMIT name {name!r} (sa1-video-fram1)"
                    video_id = f"{folder}_{target}_{name}"
                    rows.append(
                        video_row(
                            video_id,
                            path,
                            target,
                            attrs(target, video_id),
                            1,
                            method,
                            source,
                            target,
                            why,
                        )
                    )
                    shown |= {target, source} - {""}
        base = Path(vidtimit) if Path(vidtimit).is_absolute() else dataset / vidtimit
        if not base.is_dir():
            raise SourceError(f"VidTIMIT folder not found: {base} (options.vidtimit)")
        for subject in sorted(shown):
            recordings = vidtimit_recordings(base / subject)
            if not recordings:
                raise SourceError(
                    f"no VidTIMIT recordings of {subject} under {base / subject}/video "
                    "(its sentences' frame folders) or as video files"
                )
            for sentence, path in recordings.items():
                video_id = f"vidtimit_{subject}_{sentence}"
                rows.append(video_row(video_id, path, subject, attrs(subject, video_id), 0))
        return pd.DataFrame(rows)

    def imported_methods(self, name: str, dataset_cfg: Mapping) -> list[str] | None:
        qualities = (dataset_cfg.get("options") or {}).get("qualities") or ["higher"]
        return [DFTIMIT_QUALITIES[q][1] for q in qualities if q in DFTIMIT_QUALITIES]
