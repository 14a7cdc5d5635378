"""Source -> target pairing for videos: one target clip per source clip, frame by frame.

Image pairing (:func:`fairforge.pairs.make_pairs`) draws a random target image for every
source image, which would make a forged clip flicker between target clips. Here the target
*subject* is the same derangement (:func:`fairforge.pairs.assign_target_subjects`, pools of
group x split as in make_pairs), then each source video draws one video of its target
subject (seeded by the source video id), and the source frame at index i is paired with the
target clip's frame at the nearest sampled index (the same index when both clips were
sampled alike; ties go to the earlier frame).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from fairforge.pairs import NO_TARGET, PAIR_COLUMNS, assign_target_subjects
from fairforge.seeding import rng_for

log = logging.getLogger(__name__)

VIDEO_PAIR_COLUMNS = PAIR_COLUMNS + [
    "video_id",
    "target_video_id",
    "frame_index",
    "target_frame_index",
]


def has_videos(table: pd.DataFrame) -> bool:
    """True when a sources/faces table holds video frames (a non-null ``video_id``)."""
    return "video_id" in table.columns and bool(table["video_id"].notna().any())


def nearest_indices(available: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Position in sorted ``available`` of the value nearest each ``wanted`` (ties: lower)."""
    pos = np.searchsorted(available, wanted)
    lo = np.clip(pos - 1, 0, len(available) - 1)
    hi = np.clip(pos, 0, len(available) - 1)
    take_hi = np.abs(available[hi] - wanted) < np.abs(available[lo] - wanted)
    return np.where(take_hi, hi, lo)


def _faces_with_video(faces_df: pd.DataFrame, sources_df: pd.DataFrame | None) -> pd.DataFrame:
    if sources_df is not None:
        cols = [
            c
            for c in ("subject_id", "group", "split", "video_id", "frame_index")
            if c in sources_df.columns and c not in faces_df.columns
        ]
        if cols:
            faces_df = faces_df.merge(
                sources_df[["image_id"] + cols], on="image_id", how="left", validate="one_to_one"
            )
    missing = [
        c for c in ("subject_id", "group", "video_id", "frame_index") if c not in faces_df.columns
    ]
    if missing:
        raise ValueError(
            f"faces table lacks {missing}; pass sources_df (a sources manifest "
            f"of video frames) to take them from"
        )
    return faces_df


def video_pairs(
    faces_df: pd.DataFrame, seed: int, sources_df: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The pairs table for video frames: one row per ok face, sorted by image_id.

    Same columns as :func:`fairforge.pairs.make_pairs` plus video_id, target_video_id,
    frame_index and target_frame_index. ``faces_df`` needs image_id, ok, subject_id, group,
    video_id and frame_index (or ``sources_df`` to take them from).
    """
    faces = _faces_with_video(faces_df, sources_df)
    faces = faces[faces["ok"].astype(bool)].copy()
    for col in ("image_id", "subject_id", "group", "video_id"):
        faces[col] = faces[col].astype(str)
    faces["frame_index"] = faces["frame_index"].astype(np.int64)
    if faces["image_id"].duplicated().any():
        raise ValueError("faces table has duplicate image_id values")
    if "split" not in faces.columns:
        faces["split"] = None
    crossing = faces.groupby("subject_id")["group"].nunique()
    if (crossing > 1).any():
        raise ValueError(
            f"subjects in more than one group: {sorted(crossing[crossing > 1].index)[:5]}"
        )
    owners = faces.groupby("video_id")["subject_id"].nunique()
    if (owners > 1).any():
        raise ValueError(
            f"videos with frames of several subjects: {sorted(owners[owners > 1].index)[:5]}"
        )
    faces = faces.sort_values(["video_id", "frame_index", "image_id"], kind="stable")

    # The same pools and derangement as make_pairs, so image and video runs of one dataset
    # appoint the same target subjects.
    pool = faces["group"] + ("/" + faces["split"].astype(str)).where(faces["split"].notna(), "")
    subjects_by_pool = {g: sorted(s.unique()) for g, s in faces.groupby(pool)["subject_id"]}
    targets = assign_target_subjects(subjects_by_pool, seed)
    videos_of = {s: sorted(v.unique()) for s, v in faces.groupby("subject_id")["video_id"]}
    frames_of = {
        v: (part["frame_index"].to_numpy(), part["image_id"].to_numpy())
        for v, part in faces.groupby("video_id", sort=False)
    }

    parts = []
    for video_id, part in faces.groupby("video_id", sort=True):
        subject, group, split = (
            part["subject_id"].iloc[0],
            part["group"].iloc[0],
            part["split"].iloc[0],
        )
        target_subject = targets.get(subject)
        n = len(part)
        out = pd.DataFrame(
            {
                "image_id": part["image_id"].to_numpy(),
                "source_subject": subject,
                "group": group,
                "split": split,
                "video_id": video_id,
                "frame_index": part["frame_index"].to_numpy(),
            }
        )
        if target_subject is None:
            out = out.assign(
                target_image_id=None,
                target_subject=None,
                ok=False,
                reason=NO_TARGET,
                target_video_id=None,
                target_frame_index=-1,
            )
        else:
            choices = videos_of[target_subject]
            target_video = choices[
                int(rng_for(seed, "video_pair", video_id).integers(len(choices)))
            ]
            t_index, t_ids = frames_of[target_video]
            pick = nearest_indices(t_index, part["frame_index"].to_numpy())
            out = out.assign(
                target_image_id=t_ids[pick],
                target_subject=target_subject,
                ok=np.ones(n, bool),
                reason="",
                target_video_id=target_video,
                target_frame_index=t_index[pick],
            )
        parts.append(out)
    pairs = (
        pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=VIDEO_PAIR_COLUMNS)
    )
    pairs = pairs[VIDEO_PAIR_COLUMNS].sort_values("image_id", kind="stable")
    pairs = pairs.reset_index(drop=True)
    pairs["ok"] = pairs["ok"].astype(bool)
    pairs["target_frame_index"] = pairs["target_frame_index"].astype(np.int64)
    unpaired = int((~pairs["ok"]).sum())
    pairs.attrs["unpaired"] = unpaired
    if unpaired:
        log.warning(
            "%d frame(s) have no target subject (single-subject group(s): %s)",
            unpaired,
            ", ".join(sorted(set(pairs.loc[~pairs["ok"], "group"]))),
        )
    return pairs
