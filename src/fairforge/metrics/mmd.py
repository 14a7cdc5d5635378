"""Maximum mean discrepancy between two samples of feature vectors (FairFD A.7, Fig. 7).

The kernel is Gaussian (RBF), ``k(a, b) = exp(-||a - b||² / (2 σ²))``, with σ chosen by the
median heuristic: the median Euclidean distance between distinct points of the two samples
pooled (Gretton et al., "A Kernel Two-Sample Test", JMLR 2012, section 8). :func:`mmd2` is
the unbiased estimate of the squared MMD (their equation 3: the within-sample sums leave out
the diagonal), so two samples of one distribution give values around 0, slightly negative
half of the time; :func:`mmd_test` adds a permutation p-value (the pooled points shuffled
between the two samples, seeded).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairforge.seeding import rng_for


def _as_points(x, what: str) -> np.ndarray:
    points = np.asarray(x, dtype=np.float64)
    if points.ndim == 1:
        points = points[:, None]
    if points.ndim != 2:
        raise ValueError(f"{what}: expected (n, d) feature vectors, got shape {points.shape}")
    if not np.isfinite(points).all():
        raise ValueError(f"{what}: feature vectors must be finite")
    return points


def squared_distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pairwise squared Euclidean distances ``(len(x), len(y))``."""
    # imported here: the planner imports this module (through the report), and scipy is
    # not worth its import to every Snakemake start and cluster job
    from scipy.spatial.distance import cdist

    return cdist(x, y, "sqeuclidean")


def median_bandwidth(x, y) -> float:
    """σ of the median heuristic: the median distance between distinct pooled points (1.0
    when every point coincides)."""
    from scipy.spatial.distance import pdist

    pooled = np.vstack([_as_points(x, "x"), _as_points(y, "y")])
    distances = pdist(pooled)
    sigma = float(np.median(distances)) if distances.size else 0.0
    return sigma if sigma > 0 else 1.0


def _mmd2_from_kernel(k: np.ndarray, n: int) -> float:
    kxx, kyy, kxy = k[:n, :n], k[n:, n:], k[:n, n:]
    m = k.shape[0] - n
    within_x = (kxx.sum() - np.trace(kxx)) / (n * (n - 1))
    within_y = (kyy.sum() - np.trace(kyy)) / (m * (m - 1))
    return float(within_x + within_y - 2.0 * kxy.mean())


def mmd2(x, y, bandwidth: float | None = None) -> float:
    """Unbiased squared MMD of the samples ``x`` (n, d) and ``y`` (m, d) under the RBF kernel
    of ``bandwidth`` σ (None: :func:`median_bandwidth`); each sample needs two points."""
    x, y = _as_points(x, "x"), _as_points(y, "y")
    if len(x) < 2 or len(y) < 2:
        raise ValueError(f"MMD needs at least 2 points per sample, got {len(x)} and {len(y)}")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y differ in dimension: {x.shape[1]} and {y.shape[1]}")
    sigma = median_bandwidth(x, y) if bandwidth is None else float(bandwidth)
    pooled = np.vstack([x, y])
    k = np.exp(-squared_distances(pooled, pooled) / (2.0 * sigma**2))
    return _mmd2_from_kernel(k, len(x))


@dataclass(frozen=True)
class MMDResult:
    mmd2: float
    bandwidth: float
    p_value: float
    permutations: int


def mmd_test(x, y, permutations: int = 200, seed: int = 0) -> MMDResult:
    """:func:`mmd2` at the median-heuristic σ, with the permutation p-value of the hypothesis
    that both samples come from one distribution: (1 + #{permuted ≥ observed}) /
    (1 + permutations), the pooled points reassigned at random (seeded by ``seed``); NaN
    with ``permutations=0``."""
    x, y = _as_points(x, "x"), _as_points(y, "y")
    sigma = median_bandwidth(x, y)
    observed = mmd2(x, y, sigma)
    if permutations <= 0:
        return MMDResult(observed, sigma, float("nan"), 0)
    pooled = np.vstack([x, y])
    k = np.exp(-squared_distances(pooled, pooled) / (2.0 * sigma**2))
    rng = rng_for(seed, "mmd", len(x), len(y))
    n, exceed = len(x), 0
    for _ in range(permutations):
        order = rng.permutation(len(pooled))
        exceed += _mmd2_from_kernel(k[np.ix_(order, order)], n) >= observed - 1e-12
    return MMDResult(observed, sigma, (1 + exceed) / (1 + permutations), permutations)
