"""Subject-bootstrap intervals of the count-based fairness metrics (docs/metrics.md section 4).

The interval families computed from one set of subject resamples (:mod:`.resampling`): the
basic (reverse-percentile) interval, BCa with a subject-level jackknife, the plain
percentile interval, and for the gap metrics the test inversion of :mod:`.inversion`, which
is the reported one. :func:`bootstrap_intervals` gives them all per metric,
:func:`bootstrap_table` per detector.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .conventions import DEFAULT_CONVENTIONS, Conventions
from .fairness import _by_columns, _split_by
from .inversion import inverted_intervals
from .resampling import (
    SubjectStats,
    as_stats,
    bootstrap_noise,
    jackknife_estimates,
    point_estimates,
)


def bca_interval(
    estimate: float, replicates: np.ndarray, jackknife: np.ndarray, level: float = 0.95
) -> tuple[float, float, float, float]:
    """BCa interval of one metric: (low, high, z0, acceleration).

    z0 = Φ⁻¹(share of valid replicates below the estimate, ties counted half) corrects the
    median bias; the acceleration a = Σ d³ / (6 (Σ d²)^1.5), d = mean(jackknife) − jackknife
    (subject-level leave-one-out), corrects the skew. The interval is the replicates' quantiles
    at Φ(z0 + (z0 + z)/(1 − a (z0 + z))) for z = Φ⁻¹((1 ∓ level)/2). NaN when the estimate
    or every replicate is undefined.
    """
    # scipy.special is imported here: the metrics package is imported by every training and
    # prediction job, and scipy.special alone costs them a third of a second at start-up
    from scipy.special import ndtr, ndtri

    reps = replicates[np.isfinite(replicates)]
    if not np.isfinite(estimate) or reps.size == 0:
        return np.nan, np.nan, np.nan, np.nan
    tol = 1e-12 * max(1.0, abs(estimate))
    below = np.sum(reps < estimate - tol) + 0.5 * np.sum(np.abs(reps - estimate) <= tol)
    share = np.clip(below / reps.size, 0.5 / reps.size, 1 - 0.5 / reps.size)
    z0 = float(ndtri(share))
    jack = jackknife[np.isfinite(jackknife)]
    d = jack.mean() - jack if jack.size else np.zeros(0)
    denom = 6.0 * np.sum(d**2) ** 1.5
    a = float(np.sum(d**3) / denom) if denom > 0 else 0.0
    z = ndtri(np.array([(1 - level) / 2, (1 + level) / 2]))
    with np.errstate(divide="ignore", invalid="ignore"):
        adjusted = ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))
    adjusted = np.where(np.isfinite(adjusted), adjusted, np.array([0.0, 1.0]))
    low, high = np.quantile(reps, np.clip(adjusted, 0.0, 1.0))
    return float(low), float(high), z0, a


def basic_interval(
    estimate: float, replicates: np.ndarray, level: float = 0.95, floor: float | None = None
) -> tuple[float, float]:
    """The basic (reverse-percentile) bootstrap interval [2·estimate − q_hi, 2·estimate − q_lo]
    of the valid replicates, q_lo and q_hi their (1 ∓ level)/2 quantiles: it reads the
    replicates' spread around the estimate as the estimate's spread around the truth, so an
    upward-biased estimate (a gap between groups) gets an interval shifted down by the
    bias. ``floor`` clips the ends from below (0 for metrics that cannot be negative)."""
    reps = replicates[np.isfinite(replicates)]
    if not np.isfinite(estimate) or reps.size == 0:
        return np.nan, np.nan
    q_lo, q_hi = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
    low, high = 2 * estimate - q_hi, 2 * estimate - q_lo
    if floor is not None:
        low, high = max(low, floor), max(high, floor)
    return float(low), float(high)


def bootstrap_intervals(
    data: SubjectStats | pd.DataFrame,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Bias-corrected subject-bootstrap intervals of every count-based metric, under
    ``conventions`` (its threshold and rule apply to a predictions frame, not to
    :class:`~fairforge.metrics.resampling.SubjectStats`, already counted).

    One row per metric: ``estimate`` (plug-in), ``estimate_bc`` (bias-corrected: 2·estimate
    − mean of the valid replicates), ``ci_low``/``ci_high`` (the reported interval: for a
    gap the test inversion, :func:`~fairforge.metrics.inversion.inverted_intervals`; for ``ACC`` and
    ``MeanAcc``, and a gap without any spread, the basic interval; docs/metrics.md section 4
    has their measured coverage), ``basic_low``/``basic_high`` (basic bootstrap,
    :func:`basic_interval`, floored at 0 since every metric here is non-negative),
    ``bca_low``/``bca_high`` (BCa, :func:`bca_interval`) and ``pct_low``/``pct_high`` (plain
    percentile), for comparison, ``n_valid`` (replicates kept), ``n_boot``,
    ``dropped_share`` (replicates dropped because a cell changed emptiness,
    :func:`~fairforge.metrics.resampling.bootstrap_replicates`).
    """
    if not 0 < level < 1:
        raise ValueError("level must lie in (0, 1)")
    c = conventions
    ur_denominator = c.ur_denominator
    stats = as_stats(data, c.threshold, approaches, groups, c.threshold_rule)
    estimate = point_estimates(stats, ur_denominator)
    reps, noise = bootstrap_noise(stats, n_boot, seed, ur_denominator)
    jack = jackknife_estimates(stats, ur_denominator)
    inverted = inverted_intervals(stats, noise, level, ur_denominator)
    names = list(reps)
    values = np.vstack([reps[k] for k in names])
    tail = 100 * (1 - level) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN metrics stay NaN
        pct_low, pct_high = np.nanpercentile(values, [tail, 100 - tail], axis=1)
        mean = np.nanmean(values, axis=1)
    bca = [bca_interval(estimate[k], reps[k], jack[k], level) for k in names]
    basic = [basic_interval(estimate[k], reps[k], level, floor=0.0) for k in names]
    reported = [
        inverted[k] if np.all(np.isfinite(inverted.get(k, (np.nan,)))) else b
        for k, b in zip(names, basic)
    ]
    n_valid = np.isfinite(values).sum(axis=1)
    point = np.array([estimate[k] for k in names])
    return pd.DataFrame(
        {
            "estimate": point,
            "estimate_bc": 2 * point - mean,
            "ci_low": [r[0] for r in reported],
            "ci_high": [r[1] for r in reported],
            "basic_low": [b[0] for b in basic],
            "basic_high": [b[1] for b in basic],
            "bca_low": [b[0] for b in bca],
            "bca_high": [b[1] for b in bca],
            "pct_low": pct_low,
            "pct_high": pct_high,
            "n_valid": n_valid,
            "n_boot": n_boot,
            "dropped_share": 1 - n_valid / n_boot,
        },
        index=pd.Index(names, name="metric"),
    )


def bootstrap_table(
    predictions: pd.DataFrame,
    by: str | Sequence[str] | None = "detector",
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Long table of :func:`bootstrap_intervals`, one block per ``by`` value.

    The same seed gives every detector the same subject resamples (paired intervals).
    """
    cols = _by_columns(by)
    frames = []
    for name, part in _split_by(predictions, by):
        table = bootstrap_intervals(
            part, n_boot, seed, level, conventions, approaches, groups
        ).reset_index()
        names = name if isinstance(name, tuple) else (name,)
        for i, col in enumerate(cols):
            table.insert(i, col, names[i])
        frames.append(table)
    return pd.concat(frames, ignore_index=True)
