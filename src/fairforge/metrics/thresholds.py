"""Per-group decision thresholds (FairFD Table 5, docs/metrics.md section 8).

For each group, the threshold that maximises that group's accuracy on validation data is
fitted, then applied to the test data; utility and fairness at the global threshold and at
the per-group thresholds are reported side by side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from . import detection
from .conventions import DEFAULT_CONVENTIONS, Conventions
from .fairness import Threshold, _encode, _select, fairness_report


def best_threshold(label, score, prefer: float = 0.5, threshold_rule: str = ">") -> float:
    """The threshold t maximising accuracy of ``score > t`` (``score >= t`` with
    ``threshold_rule=">="``).

    Every distinct cut of the sorted scores is tried at once: the predictions depend only
    on which distinct scores lie above t. Among the cuts of maximal accuracy, ``prefer``
    is returned when it lies in one (no needless change), else the candidate nearest to it;
    candidates are the midpoints between consecutive distinct scores and, at the ends, a
    value that puts every score on one side (just below the smallest and the largest score
    with ``>``; the smallest and just above the largest with ``>=``).
    """
    geq = detection.check_threshold_rule(threshold_rule) == ">="
    y, s = detection._as_label_score(label, score)
    if y.size == 0:
        return float(prefer)
    values, inverse = np.unique(s, return_inverse=True)
    n_pos_at = np.bincount(inverse, weights=y, minlength=values.size)
    n_neg_at = np.bincount(inverse, weights=1 - y, minlength=values.size)
    # Cut k predicts real for values[:k] and fake for values[k:], k = 0 .. len(values).
    neg_below = np.r_[0.0, np.cumsum(n_neg_at)]
    pos_above = n_pos_at.sum() - np.r_[0.0, np.cumsum(n_pos_at)]
    n_correct = neg_below + pos_above
    best = np.flatnonzero(n_correct == n_correct.max())
    # With ">" cut k holds for t in [values[k-1], values[k]); with ">=" for (values[k-1],
    # values[k]] (open ends at the extremes).
    lower = np.r_[-np.inf, values][best]
    upper = np.r_[values, np.inf][best]
    inside = (lower < prefer) & (prefer <= upper) if geq else (lower <= prefer) & (prefer < upper)
    if np.any(inside):
        return float(prefer)
    mid = (values[:-1] + values[1:]) / 2
    if geq:
        candidates = np.r_[values[0], mid, np.nextafter(values[-1], np.inf)]
    else:
        candidates = np.r_[np.nextafter(values[0], -np.inf), mid, values[-1]]
    chosen = candidates[best]
    return float(chosen[np.argmin(np.abs(chosen - prefer))])


def fit_group_thresholds(
    label,
    score,
    group,
    groups: Sequence[str] | None = None,
    prefer: float = 0.5,
    threshold_rule: str = ">",
) -> dict[str, float]:
    """Per group, the accuracy-maximising threshold (:func:`best_threshold`) on these data."""
    codes, names = _encode(group, groups, "group")
    y, s = detection._as_label_score(label, score)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    out = {}
    for g, name in enumerate(names):
        idx = order[bounds[g] : bounds[g + 1]]
        if idx.size:
            out[name] = best_threshold(y[idx], s[idx], prefer, threshold_rule)
    return out


def group_threshold_values(
    group, thresholds: Mapping[str, float], default: float | None = None
) -> np.ndarray:
    """Per-sample thresholds; groups without one get ``default`` (an error when it is None)."""
    codes, names = _encode(group, None, "group")
    missing = [g for g in names if g not in thresholds]
    if missing and default is None:
        raise ValueError(f"no threshold for group(s) {missing}")
    per_code = np.array([float(thresholds.get(g, default)) for g in names], dtype=np.float64)
    return per_code[codes]


def apply_group_thresholds(
    score,
    group,
    thresholds: Mapping[str, float],
    default: float | None = None,
    threshold_rule: str = ">",
) -> np.ndarray:
    """Boolean predictions (True = fake): score > (or >=) the threshold of the sample's group."""
    return detection.predict_fake(
        score, group_threshold_values(group, thresholds, default), threshold_rule
    )


def compare_thresholds(
    validation: pd.DataFrame,
    test: pd.DataFrame,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Test metrics at the global ``conventions.threshold`` and at per-group thresholds
    fitted on ``validation`` (groups absent there keep the global threshold).

    ``approaches`` / ``groups`` restrict both the fit and the test (FairFD Table 5(b):
    ``["real", "faceswap"]`` with ``ur_denominator="acc"``). Returns the table (rows:
    :func:`fairness_report` keys; columns ``global`` and ``per_group``) and the fitted
    thresholds.
    """
    threshold = conventions.threshold
    validation = _select(validation, approaches, groups)
    fitted = fit_group_thresholds(
        validation["label"],
        validation["score"],
        validation["group"],
        prefer=threshold,
        threshold_rule=conventions.threshold_rule,
    )
    test_groups = sorted(set(test["group"].astype(str)))
    per_group: Threshold = {g: fitted.get(g, threshold) for g in test_groups}
    table = pd.DataFrame(
        {
            "global": fairness_report(test, conventions, approaches, groups),
            "per_group": fairness_report(test, conventions.at(per_group), approaches, groups),
        }
    )
    table.index.name = "metric"
    return table, fitted
