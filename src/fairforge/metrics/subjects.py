"""Detection rates per subject (FairFD A.6, Fig. 5): how much a detector's true-positive and
true-negative rates swing from one person to the next within a group. When they swing
widely, a group of few subjects is described by who happens to be in it, which is why FairFD
asks for many subjects per group."""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import detection

SUBJECT_RATE_COLUMNS = ["group", "subject_id", "n_real", "n_fake", "TNR", "TPR"]


def subject_rates(
    label, score, subject, group, threshold: float = 0.5, threshold_rule: str = ">"
) -> pd.DataFrame:
    """One row per (group, subject): its real and fake sample counts, ``TNR`` (share of its
    real samples predicted real) and ``TPR`` (share of its fakes predicted fake), a sample
    being predicted fake when score > threshold (>= with ``threshold_rule=">="``). A rate
    without samples of its class is NaN. Rows sorted by group, then subject."""
    y, s = detection._as_label_score(label, score)
    subject = np.asarray(subject, dtype=object).astype(str)
    group = np.asarray(group, dtype=object).astype(str)
    if not len(subject) == len(group) == y.size:
        raise ValueError("label, score, subject and group must have equal lengths")
    fake = detection.predict_fake(s, threshold, threshold_rule)
    frame = pd.DataFrame(
        {
            "group": group,
            "subject_id": subject,
            "real": y == 0,
            "fake": y == 1,
            "true_negative": (y == 0) & ~fake,
            "true_positive": (y == 1) & fake,
        }
    )
    counts = frame.groupby(["group", "subject_id"], sort=True).sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        tnr = counts["true_negative"] / counts["real"].where(counts["real"] > 0)
        tpr = counts["true_positive"] / counts["fake"].where(counts["fake"] > 0)
    out = pd.DataFrame(
        {
            "n_real": counts["real"].astype(np.int64),
            "n_fake": counts["fake"].astype(np.int64),
            "TNR": tnr.astype(np.float64),
            "TPR": tpr.astype(np.float64),
        }
    ).reset_index()
    return out[SUBJECT_RATE_COLUMNS]
