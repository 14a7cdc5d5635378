"""Subject-level train/val/test splits, stratified by group.

Every image of a subject lands in the same split, so a detector never sees a test identity in
training. Within each group the subjects are ordered by a seed derived from (seed, subject_id)
and cut by the fractions; a subject's split therefore depends only on the seed and the set of
subjects in its group, not on file order or sharding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from fairforge.seeding import derive_seed

SPLITS: tuple[str, ...] = ("train", "val", "test")


class SplitError(ValueError):
    pass


def check_fractions(fractions: Mapping[str, float]) -> dict[str, float]:
    """Validate ``{'train': .., 'val': .., 'test': ..}``: known names, non-negative, sum 1.

    Missing names count as 0, so ``{'test': 1.0}`` makes a test-only dataset.
    """
    unknown = sorted(set(fractions) - set(SPLITS))
    if unknown:
        raise SplitError(f"unknown split name(s) {unknown}; expected a subset of {list(SPLITS)}")
    out = {name: float(fractions.get(name, 0.0)) for name in SPLITS}
    if any(not math.isfinite(v) or v < 0 for v in out.values()):
        raise SplitError(f"split fractions must be finite and >= 0, got {out}")
    total = sum(out.values())
    if abs(total - 1.0) > 1e-6:
        raise SplitError(f"split fractions must sum to 1, got {out} (sum {total:g})")
    return out


def split_counts(n_subjects: int, fractions: Mapping[str, float]) -> dict[str, int]:
    """How many of ``n_subjects`` go to each split.

    Largest-remainder rounding of ``n * fraction``; then every split with a positive fraction
    gets at least one subject, taken from the split that holds the most (ties: the earliest
    of train, val, test gives).
    """
    fr = check_fractions(fractions)
    active = [s for s in SPLITS if fr[s] > 0]
    if n_subjects < len(active):
        raise SplitError(f"{n_subjects} subject(s) cannot fill {len(active)} splits {active}")
    exact = {s: n_subjects * fr[s] for s in SPLITS}
    counts = {s: int(math.floor(exact[s])) for s in SPLITS}
    leftover = n_subjects - sum(counts.values())
    # Largest remainder first; ties go to the earlier split so the rule is total.
    by_remainder = sorted(active, key=lambda s: (-(exact[s] - counts[s]), SPLITS.index(s)))
    for s in by_remainder[:leftover]:
        counts[s] += 1
    for s in active:
        while counts[s] == 0:
            donor = max(active, key=lambda d: (counts[d], -SPLITS.index(d)))
            counts[donor] -= 1
            counts[s] += 1
    return counts


def subject_strata(subjects: pd.Series, groups: pd.Series) -> pd.Series:
    """One group per subject: its most frequent group (ties: the smallest name).

    Subjects normally belong to one group; the rule only matters when ``group_by`` uses a
    per-image attribute (e.g. an age bin), and keeps the split subject-level even then.
    """
    counts = (
        pd.DataFrame(
            {"subject_id": subjects.astype(str).to_numpy(), "group": groups.astype(str).to_numpy()}
        )
        .value_counts()
        .rename("n")
        .reset_index()
    )
    counts = counts.sort_values(
        ["subject_id", "n", "group"], ascending=[True, False, True], kind="mergesort"
    )
    first = counts.drop_duplicates("subject_id", keep="first")
    return pd.Series(first["group"].to_numpy(), index=first["subject_id"].to_numpy(), name="group")


def assign_subject_splits(
    subjects: pd.Series, groups: pd.Series, fractions: Mapping[str, float], seed: int
) -> dict[str, str]:
    """Map each subject id to 'train', 'val' or 'test'.

    Raises :class:`SplitError` naming the group when a group has fewer subjects than there
    are splits with a positive fraction (a group absent from a split would make per-group
    metrics on that split undefined).
    """
    fr = check_fractions(fractions)
    strata = subject_strata(subjects, groups)
    assignment: dict[str, str] = {}
    for group, members in strata.groupby(strata, sort=True):
        ids = np.asarray(members.index, dtype=object)
        keys = np.array([derive_seed(seed, "split", sid) for sid in ids], dtype=np.uint64)
        order = np.lexsort((ids.astype(str), keys))
        try:
            counts = split_counts(len(ids), fr)
        except SplitError as err:
            raise SplitError(
                f"group {group!r}: {err}; add subjects, merge groups or change the split fractions"
            ) from None
        bounds = np.cumsum([counts[s] for s in SPLITS])
        labels = np.array(SPLITS, dtype=object)[
            np.searchsorted(bounds, np.arange(len(ids)), side="right")
        ]
        assignment.update(zip(ids[order].tolist(), labels.tolist()))
    return assignment


def split_by_subject(
    df: pd.DataFrame,
    fractions: Mapping[str, float],
    seed: int,
    subject_col: str = "subject_id",
    group_col: str = "group",
) -> pd.Series:
    """The split of every row of ``df``, as a string Series aligned with ``df``."""
    mapping = assign_subject_splits(df[subject_col], df[group_col], fractions, seed)
    return df[subject_col].astype(str).map(mapping).astype(object)
