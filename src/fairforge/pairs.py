"""Source -> target pairing for the forgery stage (FairFD section 3.4).

Every subject is appointed one target subject of the same group: a random derangement of the
group's subjects (seeded by the group), so nobody targets themself and the pairing is the
same for every identity-replacing method. Each source image then gets one random ok image of
its target subject (seeded by the image id). Only faces with ``ok`` take part. A group with
a single subject cannot pair: its images stay in the table with ``ok=False`` and a reason,
so the forgery manifests can record them.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from .columns import PAIR_COLUMNS
from .seeding import derive_seed, rng_for

log = logging.getLogger(__name__)

NO_TARGET = "no target subject in group"


def derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random permutation of range(n) with no fixed point (n >= 2).

    Rejection sampling: a random permutation is a derangement with probability ~1/e.
    """
    if n < 2:
        raise ValueError("a derangement needs at least 2 elements")
    idx = np.arange(n)
    while True:
        perm = rng.permutation(n)
        if not (perm == idx).any():
            return perm


def _with_subjects(faces_df: pd.DataFrame, sources_df: pd.DataFrame | None) -> pd.DataFrame:
    """Faces with subject_id and group (and split when known), taken from the sources."""
    if sources_df is not None:
        cols = [
            c
            for c in ("subject_id", "group", "split")
            if c in sources_df.columns and c not in faces_df.columns
        ]
        if cols:
            faces_df = faces_df.merge(
                sources_df[["image_id"] + cols], on="image_id", how="left", validate="one_to_one"
            )
    missing = [c for c in ("subject_id", "group") if c not in faces_df.columns]
    if missing:
        raise ValueError(
            f"faces table lacks {missing}; pass sources_df to take them from the sources manifest"
        )
    return faces_df


def assign_target_subjects(subjects_by_group: dict[str, list[str]], seed: int) -> dict[str, str]:
    """subject -> target subject, a derangement within each group of >= 2 subjects."""
    targets: dict[str, str] = {}
    for group in sorted(subjects_by_group):
        subjects = sorted(subjects_by_group[group])
        if len(subjects) < 2:
            continue
        perm = derangement(len(subjects), np.random.default_rng(derive_seed(seed, group)))
        targets.update({s: subjects[j] for s, j in zip(subjects, perm)})
    return targets


def make_pairs(
    faces_df: pd.DataFrame, seed: int, sources_df: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The pairs table: one row per ok face, sorted by image_id.

    ``faces_df`` needs image_id, ok, subject_id and group (or ``sources_df`` to take
    subject_id, group and split from). Rows whose group has one subject have
    ``target_image_id=None``, ``ok=False`` and ``reason`` :data:`NO_TARGET`; their count is
    in ``df.attrs["unpaired"]`` and logged.
    """
    faces = _with_subjects(faces_df, sources_df)
    faces = faces[faces["ok"].astype(bool)].copy()
    faces["image_id"] = faces["image_id"].astype(str)
    faces["subject_id"] = faces["subject_id"].astype(str)
    faces["group"] = faces["group"].astype(str)
    if faces["image_id"].duplicated().any():
        raise ValueError("faces table has duplicate image_id values")
    if "split" not in faces.columns:
        faces["split"] = None
    faces = faces.sort_values("image_id", kind="stable")

    # Pools are group x split: a train fake must not carry a test subject's face or background
    # (that would leak test identities into training). Without splits the pool is the group.
    pool = faces["group"] + ("/" + faces["split"].astype(str)).where(faces["split"].notna(), "")
    subjects_by_group = {g: sorted(s.unique()) for g, s in faces.groupby(pool)["subject_id"]}
    crossing = faces.groupby("subject_id")["group"].nunique()
    if (crossing > 1).any():
        raise ValueError(
            f"subjects in more than one group: {sorted(crossing[crossing > 1].index)[:5]}"
        )
    targets = assign_target_subjects(subjects_by_group, seed)
    images_of = {s: sorted(ids) for s, ids in faces.groupby("subject_id")["image_id"]}

    rows = []
    for image_id, subject, group, split in faces[
        ["image_id", "subject_id", "group", "split"]
    ].itertuples(index=False):
        target_subject = targets.get(subject)
        if target_subject is None:
            rows.append((image_id, None, subject, None, group, split, False, NO_TARGET))
            continue
        choices = images_of[target_subject]
        pick = choices[int(rng_for(seed, "pair", image_id).integers(len(choices)))]
        rows.append((image_id, pick, subject, target_subject, group, split, True, ""))
    pairs = pd.DataFrame(rows, columns=PAIR_COLUMNS)
    pairs["ok"] = pairs["ok"].astype(bool)
    unpaired = int((~pairs["ok"]).sum())
    pairs.attrs["unpaired"] = unpaired
    if unpaired:
        lonely = sorted(set(pairs.loc[~pairs["ok"], "group"]))
        log.warning(
            "%d image(s) have no target subject (single-subject group(s): %s)",
            unpaired,
            ", ".join(lonely),
        )
    return pairs
