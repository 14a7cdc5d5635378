"""Rates of counted outcomes per group (docs/metrics.md section 11): the interval of one
rate and the test that every group has the same rate.

- :func:`wilson_interval`: Wilson's score interval of k successes in n trials. At the
  counts a pipeline stage fails on (a few dozen faces per group, rates near 0 or 1) its
  coverage stays close to the nominal level, where the Wald interval collapses to a point at
  0 or n and Clopper–Pearson's covers well above it (Brown, Cai & DasGupta 2001).
- :func:`equal_rates_test`: is the rate the same in every group (a groups × 2 table)?
  Pearson's chi-square test when every expected count is at least 5 (Cochran's rule), else
  the Freeman–Halton exact test (Fisher's exact test for two groups): the p-value sums the
  probability, under the multivariate hypergeometric law of tables with the observed
  margins, of every table no more probable than the observed one. The tables are counted
  exactly up to :data:`MAX_TABLES`; beyond, the same sum is estimated from
  :data:`MONTE_CARLO_TABLES` seeded draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

CHI_SQUARE = "chi-square"
EXACT = "Freeman-Halton exact"
MONTE_CARLO = "Freeman-Halton Monte Carlo"
#: The smallest expected count at which the chi-square approximation is used (Cochran).
MIN_EXPECTED = 5.0
#: The most tables the exact test enumerates before it estimates its p-value instead.
MAX_TABLES = 1_000_000
#: Draws of the Monte Carlo estimate (its standard error at p = 0.05 is 0.0007).
MONTE_CARLO_TABLES = 100_000
# Tables whose probability is within this relative tolerance of the observed one count as
# equally probable (R's fisher.test uses the same, against rounding in the products).
_RELATIVE_TOLERANCE = 1e-7


def wilson_interval(k, n, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval ``(low, high)`` of the rate k / n, elementwise; NaN where n is 0.

    With z the normal quantile of (1 + confidence) / 2 and p = k / n the bounds are
    (p + z²/2n ± z √(p(1 − p)/n + z²/4n²)) / (1 + z²/n); exactly 0 at k = 0 and 1 at k = n.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("counts must satisfy 0 <= k <= n")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        scale = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / scale
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / scale
        low = np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
        high = np.where(k == n, 1.0, np.clip(centre + half, 0.0, 1.0))
    empty = n == 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


@dataclass(frozen=True)
class RatesTest:
    """The outcome of :func:`equal_rates_test`."""

    test: str  # CHI_SQUARE, EXACT, MONTE_CARLO, or "" when there is nothing to compare
    statistic: float  # Pearson's X² of the table (NaN where an expected count is 0)
    df: int  # groups − 1
    p_value: float  # NaN with fewer than two groups


def _log_choose(n: int) -> np.ndarray:
    """log C(n, x) for x = 0..n."""
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))])
    return log_fact[n] - log_fact - log_fact[::-1]


def _table_log_probs(log_choose: list[np.ndarray], m: int, limit: int) -> np.ndarray | None:
    """log P of every table with the margins (group sizes, m events in all), or None past
    ``limit`` tables. Groups are added one at a time, each partial table taking the counts
    that still let the later groups reach m: every partial table extends to a whole one, so
    no step holds more than the answer."""
    sizes = np.array([len(lc) - 1 for lc in log_choose], dtype=np.int64)
    capacity_after = np.r_[np.cumsum(sizes[::-1])[::-1][1:], 0]
    sums = np.zeros(1, dtype=np.int64)
    log_p = np.zeros(1)
    for size, lc, after in zip(sizes, log_choose, capacity_after):
        low = np.maximum(0, m - sums - after)
        high = np.minimum(size, m - sums)
        count = high - low + 1
        if count.sum() > limit:
            return None
        parent = np.repeat(np.arange(len(sums)), count)
        x = low[parent] + np.arange(parent.size) - np.repeat(np.cumsum(count) - count, count)
        sums = sums[parent] + x
        log_p = log_p[parent] + lc[x]
    return log_p


def equal_rates_test(
    k, n, *, seed: int = 0, max_tables: int = MAX_TABLES, draws: int = MONTE_CARLO_TABLES
) -> RatesTest:
    """Test that groups with ``k`` events out of ``n`` trials share one rate (module
    docstring: chi-square when every expected count is >= :data:`MIN_EXPECTED`, else the
    Freeman–Halton exact test, by Monte Carlo with ``seed`` past ``max_tables`` tables).
    Groups with n = 0 are left out; with fewer than two groups there is no test."""
    k = np.asarray(k, dtype=np.int64).reshape(-1)
    n = np.asarray(n, dtype=np.int64).reshape(-1)
    if k.shape != n.shape or np.any(k < 0) or np.any(k > n):
        raise ValueError("k and n must have equal lengths and satisfy 0 <= k <= n")
    k, n = k[n > 0], n[n > 0]
    df = max(len(n) - 1, 0)
    if len(n) < 2:
        return RatesTest("", math.nan, df, math.nan)
    total, m = int(n.sum()), int(k.sum())
    observed = np.column_stack([k, n - k]).astype(np.float64)
    expected = np.outer(n, [m, total - m]).astype(np.float64) / total
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = float(np.sum((observed - expected) ** 2 / expected))
    if expected.min() >= MIN_EXPECTED:
        from scipy.special import gammaincc  # the chi-square survival function

        return RatesTest(CHI_SQUARE, statistic, df, float(gammaincc(df / 2, statistic / 2)))
    if m > total - m:  # the law is the same counting the other outcome; fewer tables
        k, m = n - k, total - m
    log_choose = [_log_choose(int(size)) for size in n]
    log_all = float(_log_choose(total)[m])

    def log_prob(x: np.ndarray) -> np.ndarray:
        return sum(log_choose[i][x[:, i]] for i in range(len(n)))

    observed_log = float(log_prob(k[None, :])[0]) + math.log1p(_RELATIVE_TOLERANCE)
    statistic = statistic if np.isfinite(statistic) else math.nan
    log_p = _table_log_probs(log_choose, m, max_tables)
    if log_p is not None:
        p = float(np.exp(log_p[log_p <= observed_log] - log_all).sum())
        return RatesTest(EXACT, statistic, df, min(1.0, p))
    rng = np.random.default_rng(seed)
    drawn = rng.multivariate_hypergeometric(n, m, size=draws)
    hits = int(np.count_nonzero(log_prob(drawn) <= observed_log))
    return RatesTest(MONTE_CARLO, statistic, df, (hits + 1) / (draws + 1))
