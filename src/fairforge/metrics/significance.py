"""Tests of the gap metrics (docs/metrics.md section 4).

- :func:`permutation_pvalues`: is a gap larger than chance? Group labels are shuffled across
  subjects (a subject's samples staying together).
- :func:`paired_differences`: is detector A fairer than B? The same subject resamples for
  both (:mod:`.resampling`), the difference's basic interval and the p-value of its
  inversion.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from ..seeding import rng_for
from .conventions import DEFAULT_CONVENTIONS, Conventions
from .fairness import NOT_GAPS, metrics_from_cell_counts
from .intervals import basic_interval
from .resampling import (
    CHUNK,
    SubjectStats,
    align_stats,
    as_stats,
    bootstrap_replicates,
    point_estimates,
    subject_resample_indices,
)

# --------------------------------------------------------------------------- permutation test


def permutation_pvalues(
    data: SubjectStats | pd.DataFrame,
    n_perm: int = 1000,
    seed: int = 0,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
) -> dict[str, float]:
    """One-sided p-values that each gap metric is larger than chance, under ``conventions``.

    Under the null, group labels are exchangeable across subjects: each replicate shuffles
    the subjects' groups (group sizes kept, a subject's samples staying together).
    p = (1 + #{replicate >= observed}) / (1 + #valid replicates).
    """
    if n_perm < 1:
        raise ValueError("n_perm must be positive")
    c = conventions
    ur_denominator = c.ur_denominator
    stats = as_stats(data, c.threshold, approaches, groups, c.threshold_rule)
    observed = point_estimates(stats, ur_denominator)
    data_empty = stats.cell_counts()[1] == 0
    rng = rng_for("fairforge.metrics.permutation", seed)
    exceed: dict[str, int] = {}
    valid: dict[str, int] = {}
    for start in range(0, n_perm, CHUNK):
        assignment = rng.permuted(
            np.broadcast_to(stats.subject_group, (CHUNK, stats.n_subjects)), axis=1
        )[: min(CHUNK, n_perm - start)]
        correct, total = stats.cell_counts_for_assignment(assignment)
        # a shuffle that empties other cells than the data's measures other cells: dropped
        dropped = ((total == 0) != data_empty).any(axis=(-2, -1))
        reps = metrics_from_cell_counts(correct, total, stats.real_index, ur_denominator)
        for key, value in reps.items():
            if key in NOT_GAPS:
                continue
            value = np.where(dropped, np.nan, value)
            # A relative tolerance so that a replicate equal to the data counts as reaching it
            # despite a different summation order.
            obs = observed[key]
            reach = value >= obs - 1e-12 * max(1.0, abs(obs))
            exceed[key] = exceed.get(key, 0) + int(np.sum(reach & np.isfinite(value)))
            valid[key] = valid.get(key, 0) + int(np.sum(np.isfinite(value)))
    return {
        k: (
            float("nan")
            if not np.isfinite(observed[k]) or valid[k] == 0
            else (1 + exceed[k]) / (1 + valid[k])
        )
        for k in exceed
    }


def permutation_pvalue(
    data: SubjectStats | pd.DataFrame,
    metric: str = "DPD",
    n_perm: int = 1000,
    seed: int = 0,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
) -> float:
    """The permutation p-value of one metric (a key of :func:`permutation_pvalues`)."""
    pvalues = permutation_pvalues(data, n_perm, seed, conventions, approaches, groups)
    if metric not in pvalues:
        raise ValueError(f"unknown gap metric {metric!r}; choose from {sorted(pvalues)}")
    return pvalues[metric]


# --------------------------------------------------------------------------- paired comparisons


def paired_differences(
    stats_a: SubjectStats,
    stats_b: SubjectStats,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    ur_denominator: str | Iterable[str] = "one_plus_acc",
) -> pd.DataFrame:
    """Is detector A fairer than B: every gap metric's difference A − B, from paired
    subject-level resampling (the same resampled subjects for both detectors).

    One row per gap metric: ``estimate`` (A − B), ``ci_low``/``ci_high`` (the basic bootstrap
    interval of the difference, :func:`~fairforge.metrics.intervals.basic_interval`), ``p_value`` (two-sided, H0: no
    difference, the inversion of that interval: 2·(1 + #{replicates on the far side of
    2·estimate}) / (1 + n_valid), capped at 1; 0 lies in the level-(1 − α) interval exactly
    when p > α, up to the +1s), ``n_valid``, ``n_boot``. A replicate that drops for either
    detector drops for the difference.
    """
    stats_a, stats_b = align_stats(stats_a, stats_b)
    indices = subject_resample_indices(stats_a, n_boot, seed)
    est_a = point_estimates(stats_a, ur_denominator)
    est_b = point_estimates(stats_b, ur_denominator)
    reps_a = bootstrap_replicates(stats_a, ur_denominator=ur_denominator, indices=indices)
    reps_b = bootstrap_replicates(stats_b, ur_denominator=ur_denominator, indices=indices)
    rows = []
    for key in est_a:
        if key in NOT_GAPS:
            continue
        estimate = est_a[key] - est_b[key]
        diff = reps_a[key] - reps_b[key]
        valid = diff[np.isfinite(diff)]
        low, high = basic_interval(estimate, diff, level)
        if valid.size and np.isfinite(estimate):
            far = min(np.sum(valid <= 2 * estimate), np.sum(valid >= 2 * estimate))
            p = min(1.0, 2 * (1 + far) / (1 + valid.size))
        else:
            p = float("nan")
        rows.append(
            {
                "metric": key,
                "estimate": estimate,
                "ci_low": low,
                "ci_high": high,
                "p_value": p,
                "n_valid": int(valid.size),
                "n_boot": n_boot,
            }
        )
    return pd.DataFrame(rows)
