"""A training set balanced by subjects per group (FairFD §5.3.1, Table 4).

FairFD balances FaceForensics++ by people, not by images: "we can only select 26 subjects
from each race", each with all of their frames. :func:`balance_subjects` keeps ``subjects``
subjects of every listed group (drawn by a seed derived from each subject id, so the choice
does not depend on row order) and every row of theirs, real and fake; rows of other groups
are left out. A fake belongs to the subject the dataset gives it (FaceForensics++: the
target video's person).

A detector's ``balanced: true`` instead subsamples rows to equal counts per group and label
(:func:`fairforge.training.balance_groups`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pandas as pd

from fairforge.seeding import derive_seed

log = logging.getLogger(__name__)


class BalanceError(ValueError):
    pass


def balance_subjects(
    frame: pd.DataFrame,
    subjects: int,
    groups: Sequence[str] | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """The rows of ``subjects`` subjects of each of ``groups`` (None: every group present),
    in the frame's order. A group with fewer subjects, or none, is an error naming it and
    its count: a smaller group would make the set unbalanced without saying so."""
    if subjects < 1:
        raise BalanceError(f"balanced.subjects must be at least 1, got {subjects}")
    owners = frame[["group", "subject_id"]].astype(str).drop_duplicates()
    present = sorted(owners["group"].unique())
    wanted = list(groups) if groups is not None else present
    counts = owners.groupby("group").size()
    short = {g: int(counts.get(g, 0)) for g in wanted if counts.get(g, 0) < subjects}
    if short:
        raise BalanceError(
            f"balanced.subjects: {subjects} subjects per group asked, but the training split "
            f"has fewer in {short} (groups present: { ({g: int(n) for g, n in counts.items()}) }); lower "
            "balanced.subjects or check the group labels (for FaceForensics++ the race "
            "annotation file, datasets.<name>.options.attributes)"
        )
    chosen = set()
    for group in wanted:
        ids = owners.loc[owners["group"] == group, "subject_id"]
        ranked = sorted(ids, key=lambda s: (derive_seed(seed, "balance", group, s), s))
        chosen.update((group, s) for s in ranked[:subjects])
    keys = zip(frame["group"].astype(str), frame["subject_id"].astype(str))
    kept = frame.loc[[key in chosen for key in keys]].reset_index(drop=True)
    log.info(
        "balanced by subjects: %d per group of %s, %d of %d rows kept (per group and label: %s)",
        subjects,
        wanted,
        len(kept),
        len(frame),
        kept.groupby(["group", "label"]).size().to_dict(),
    )
    return kept
