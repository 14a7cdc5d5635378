"""Intervals of the gap metrics by test inversion (docs/metrics.md section 4).

A gap (a range or standard deviation across groups) is not a smooth function of the cell
accuracies where groups are close, and there every bootstrap interval built around the
estimate fails. :func:`inverted_intervals` simulates the estimate's distribution under
candidate truths along the data's pattern of gaps (and plausible moves of it) and keeps the
candidates whose simulated quantiles hold the estimate; :func:`prepivot_quantiles`
optionally calibrates that test by a second bootstrap level (Beran's prepivoting). The
sampling error comes from the subject bootstrap of :mod:`.resampling`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np

from .fairness import NOT_GAPS, metrics_from_cell_counts
from .resampling import SubjectStats

# The candidate shrinkage factors λ of :func:`inverted_intervals`: 0 and a geometric grid,
# 3 per doubling, from 1/16 to 64; between them the quantiles are interpolated linearly.
LAMBDA_GRID = np.concatenate([[0.0], 2.0 ** np.linspace(-4, 6, 10 * 3 + 1)])
_LAMBDA_CHUNK = 32
# The candidate gap patterns of inverted_intervals (docs/metrics.md section 4): "observed"
# the data's pattern only; "perturbed" also PERTURB_PATTERNS patterns moved by PERTURB_SCALE
# times a sampling error; "adaptive" the same moves, each row's shrunk by its signal share
# (the share of its spread across groups that the noise does not explain) to the power
# ADAPTIVE_POWER. Moves need at least PERTURB_MIN_ROWS valid resamples.
NUISANCES = ("observed", "perturbed", "adaptive")
PERTURB_PATTERNS = 8
PERTURB_SCALE = 1.0
ADAPTIVE_POWER = 4.0
PERTURB_MIN_ROWS = 80


def inverted_intervals(
    stats: SubjectStats,
    noise: np.ndarray,
    level: float = 0.95,
    ur_denominator: str | Iterable[str] = "one_plus_acc",
    calibrate: bool = False,
    nuisance: str = "adaptive",
) -> dict[str, tuple[float, float]]:
    """Confidence intervals of the gap metrics by inverting a test along the data's own
    pattern of gaps and plausible moves of it (docs/metrics.md section 4): name -> (low, high).

    A gap (a range or standard deviation across groups) is not a smooth function of the cell
    accuracies where groups are close, and there every bootstrap interval built around the
    estimate fails: the estimate's distribution depends on how far apart the true cells are.
    So the estimate's distribution is simulated under each candidate truth instead. The
    candidates are the data's cells with their spread across groups scaled by λ ≥ 0,
    A(λ)[f, s] = Ā_f + λ (Â[f, s] − Ā_f) (Ā_f the row's mean over groups; λ = 1 is the
    data, λ = 0 no gap at all, and every range and std scales by λ). Under A(λ) an estimate
    is metric(A(λ) + ε) with ε the sampling error of the cells, drawn as the subject
    bootstrap's ``noise`` (resampled minus observed cell accuracies, (B, F, S)), each group's
    inflated by √(n/(n − 1)) for its n subjects (the bootstrap's variance is (n − 1)/n of
    the unbiased one).

    The test accepts λ when the estimate lies between the (1 ∓ level)/2 quantiles of the
    simulated estimates. With ``calibrate`` (off by default: measured, it did not improve
    the coverage, docs/metrics.md section 4) it is calibrated by Beran's prepivoting
    instead: the estimate is standardised by the simulated mean μ(λ) and standard deviation
    σ(λ), R = (estimate − μ(λ)) / σ(λ), and λ accepted when R lies between the quantiles
    :func:`prepivot_quantiles` reads off a second bootstrap level (pseudo-data sets drawn
    from the data's cells, each tested along its own pattern as the data are, which measures
    the error of testing along an estimated pattern). The interval is the metric of A(λ) from the
    smallest to the largest accepted λ (computed on :data:`LAMBDA_GRID`, interpolated
    linearly between its points). The lower end is 0 when the estimate is within what no gap
    at all would give. NaN for a metric whose estimate is NaN or does not change with λ (no
    spread at all), and when every resample was dropped.

    The observed pattern is itself noisy: where groups are close at a range's extreme, the
    noise has moved them apart (or together), and the upward bias simulated along it is
    too small (or too large). With ``nuisance="perturbed"`` the test is also
    run along :data:`PERTURB_PATTERNS` patterns moved by a sampling error each (spread +
    ε_r, ε_r centred over groups, rows r from the even resamples; simulated with the odd
    ones), plausible truths given the data, and the interval is the union of the metric
    values accepted under any of them; a moved pattern under which no λ holds the estimate
    is rejected whole. ``nuisance="adaptive"`` (the default, the reported interval) makes
    the same moves, each row's multiplied by its :func:`signal_share` to the power
    :data:`ADAPTIVE_POWER`: full moves where a row's pattern stands well above the noise
    (where the near-ties bite), none where the pattern is mostly noise (where full moves
    over-cover). ``nuisance="observed"`` is the observed pattern only. docs/metrics.md
    section 4 has the coverage of each.
    """
    correct, total = stats.cell_counts()
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = correct / total
    noise = noise[np.isfinite(noise).all(axis=(-2, -1))]
    n_group = np.bincount(stats.subject_group, minlength=len(stats.groups)).astype(np.float64)
    noise = noise * np.sqrt(np.where(n_group > 1, n_group / np.maximum(n_group - 1, 1), 1.0))
    return invert_on_cells(
        acc, total, stats.real_index, noise, level, ur_denominator, calibrate, nuisance
    )


def invert_on_cells(
    acc: np.ndarray,
    total: np.ndarray,
    real_index: int,
    noise: np.ndarray,
    level: float = 0.95,
    ur_denominator: str | Iterable[str] = "one_plus_acc",
    calibrate: bool = False,
    nuisance: str = "adaptive",
) -> dict[str, tuple[float, float]]:
    """:func:`inverted_intervals` on cell accuracies ``acc`` (F, S) with ``total`` samples
    per cell and the sampling error ``noise`` (B, F, S), valid and already inflated."""
    centre, spread = _centre_spread(acc)
    grid = LAMBDA_GRID
    observed = _scaled_metrics(centre, spread, total, real_index, ur_denominator, None)
    names = [k for k in observed if k not in NOT_GAPS]
    out = {k: (np.nan, np.nan) for k in names}
    if noise.shape[0] == 0:
        return out
    roots = (
        prepivot_quantiles(acc, total, real_index, noise, level, ur_denominator)
        if calibrate
        else {}
    )
    if nuisance not in NUISANCES:
        raise ValueError(f"nuisance must be one of {NUISANCES}, not {nuisance!r}")
    # (pattern, noise rows simulating it): the observed pattern with every row; with
    # "perturbed" and "adaptive" also PERTURB_PATTERNS patterns moved by sampling errors (the even
    # rows), each simulated with the odd rows, so that no row both moves and simulates one
    patterns = [(spread, noise)]
    if nuisance != "observed" and noise.shape[0] >= PERTURB_MIN_ROWS:
        moves, sims = noise[0::2], noise[1::2]
        moves = moves - moves.mean(axis=-1, keepdims=True)
        scale = PERTURB_SCALE
        if nuisance == "adaptive":
            scale = scale * signal_share(spread, noise)[:, None] ** ADAPTIVE_POWER
        picks = np.linspace(0, moves.shape[0] - 1, PERTURB_PATTERNS).round().astype(np.int64)
        patterns += [(spread + scale * moves[r], sims) for r in picks]
    levels = [(1 - level) / 2, (1 + level) / 2]
    ranges: dict[str, list[tuple[float, float]]] = {k: [] for k in names}
    names_without: set[str] = set()
    for pattern, draws in patterns:
        truth = _scaled_metrics(centre, pattern, total, real_index, ur_denominator, None, grid)
        parts: dict[str, list[np.ndarray]] = {k: [] for k in names}
        for start in range(0, grid.size, _LAMBDA_CHUNK):
            sim = _scaled_metrics(
                centre,
                pattern,
                total,
                real_index,
                ur_denominator,
                draws,
                grid[start : start + _LAMBDA_CHUNK],
            )
            for k in names:
                q_root = roots.get(k, (np.nan, np.nan))
                if np.all(np.isfinite(q_root)):
                    mean, sd = sim[k].mean(axis=-1), sim[k].std(axis=-1, ddof=1)
                    bounds = np.stack([mean + q_root[0] * sd, mean + q_root[1] * sd])
                else:
                    bounds = np.quantile(sim[k], levels, axis=-1)
                parts[k].append(bounds)
        for k in names:
            obs, theta = float(observed[k]), truth[k]
            if pattern is spread and (
                not np.isfinite(obs) or np.ptp(theta) <= 1e-12 * max(1.0, abs(obs))
            ):
                names_without.add(k)  # no spread at all: no interval (the caller's basic one)
            if k in names_without:
                continue
            low, high = np.concatenate(parts[k], axis=1)
            # a moved pattern under which no λ holds the estimate is rejected as a whole;
            # only the observed one falls back to [0, closest] (_accepted_range)
            found = _accepted_range(grid, theta, low - obs, high - obs, fallback=pattern is spread)
            if found is not None:
                ranges[k].append(found)
    for k in names:
        if ranges[k]:
            out[k] = (min(r[0] for r in ranges[k]), max(r[1] for r in ranges[k]))
    return out


def signal_share(spread: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Per row f of the cells' ``spread`` (F, S) around the row means, the share of its
    variance across groups that the sampling error ``noise`` (B, F, S) does not explain:
    1 − σ²_f / v_f clipped to [0, 1], v_f the row's sample variance over its filled cells
    and σ²_f the mean variance of their errors (the empirical-Bayes shrinkage factor of a
    normal means model). 0 for a row without two filled cells or without spread."""
    filled = np.isfinite(spread)
    n = filled.sum(axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        observed = np.where(filled, spread, 0.0) ** 2
        observed = observed.sum(axis=-1) / np.maximum(n - 1, 1)
        sampling = np.where(filled, noise.var(axis=0, ddof=1), 0.0).sum(axis=-1) / n
        share = 1.0 - sampling / observed
    share = np.where((n >= 2) & (observed > 0), share, 0.0)
    return np.clip(np.nan_to_num(share, nan=0.0), 0.0, 1.0)


def _centre_spread(acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's mean over groups (keeping the last axis) and the cells minus it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        centre = np.nanmean(acc, axis=-1, keepdims=True)
    return centre, acc - centre


# Prepivoting's two levels: outer pseudo-data sets and, per pseudo-data set and candidate,
# inner simulated estimates; the candidates of a pseudo-data set are PREPIVOT_CANDIDATES
# values of λ spanning the metrics' λ* (see prepivot_quantiles).
PREPIVOT_OUTER = 200
PREPIVOT_INNER = 50
PREPIVOT_CANDIDATES = 4


def prepivot_quantiles(
    acc: np.ndarray,
    total: np.ndarray,
    real_index: int,
    noise: np.ndarray,
    level: float = 0.95,
    ur_denominator: str | Iterable[str] = "one_plus_acc",
) -> dict[str, tuple[float, float]]:
    """The calibrated acceptance quantiles of the standardised root of
    :func:`inverted_intervals`: gap name -> (q_lo, q_hi). Prepivoting (Beran 1987) by a
    second bootstrap level, on the cell accuracies only.

    In the bootstrap world the data's cells ``acc`` (F, S) are the truth, θ their metric.
    Pseudo-data sets are Â_b = acc + ε_b for the first :data:`PREPIVOT_OUTER` rows of
    ``noise`` (B, F, S; already valid and inflated). Each is tested as the data are: along its
    own pattern, A_b(λ) = Ā_b + λ (Â_b − Ā_b), at the λ*_b where its candidate's metric is
    the truth θ, its root is R_b = (metric(Â_b) − μ_b) / σ_b with μ_b and σ_b the mean and
    standard deviation of metric(A_b(λ*_b) + ε_c) over :data:`PREPIVOT_INNER` other rows
    c of ``noise`` (spread over all rows, a different set for each b). μ_b and σ_b are computed at
    :data:`PREPIVOT_CANDIDATES` values of λ spanning every metric's λ*_b and interpolated
    linearly, so one stack of cell sets serves all metrics. The (1 ∓ level)/2 quantiles of the
    R_b are returned; a metric gets NaNs (the caller falls back to the uncalibrated test)
    when fewer than 40 pseudo-data sets give a root or there are too few noise rows.
    """
    n_rows = noise.shape[0]
    n_out = min(PREPIVOT_OUTER, n_rows)
    n_in = min(PREPIVOT_INNER, n_rows - 1)
    if n_out < 40 or n_in < 10:
        return {}
    outer = noise[:n_out]
    # pseudo-data set b's inner rows: n_in rows spread over all of them, shifted by b, never
    # b itself; each b its own set, so that the Monte Carlo error of one set's mean and
    # standard deviation does not move every root the same way
    step = max(1, (n_rows - 1) // n_in)
    rows_in = (np.arange(n_out)[:, None] + 1 + step * np.arange(n_in)[None]) % n_rows
    inner = noise[rows_in]  # (Bo, Bi, F, S)
    truth = metrics_from_cell_counts(
        np.where(total > 0, acc * total, 0.0), total, real_index, ur_denominator
    )
    names = [k for k in truth if k not in NOT_GAPS]
    pseudo = acc[None] + outer  # (Bo, F, S)
    centre, spread = _centre_spread(pseudo)
    grid = LAMBDA_GRID
    path = _metrics_of_acc(
        centre[:, None] + grid[None, :, None, None] * spread[:, None],
        total,
        real_index,
        ur_denominator,
    )  # name -> (Bo, G)
    estimate = _metrics_of_acc(pseudo, total, real_index, ur_denominator)  # name -> (Bo,)
    lam_star = {k: _crossing(grid, path[k], float(truth[k])) for k in names}
    stacked = np.stack([lam_star[k] for k in names])  # (K_metrics, Bo)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lam_lo = np.nanmin(stacked, axis=0)
        lam_hi = np.nanmax(stacked, axis=0)
    usable = np.isfinite(lam_lo)
    lam_lo, lam_hi = np.where(usable, lam_lo, 0.0), np.where(usable, lam_hi, 0.0)
    steps = np.linspace(0.0, 1.0, PREPIVOT_CANDIDATES)
    lams = lam_lo[:, None] + steps[None] * (lam_hi - lam_lo)[:, None]  # (Bo, K)
    cells = (
        centre[:, None, None]
        + lams[:, :, None, None, None] * spread[:, None, None]
        + inner[:, None]
    )  # (Bo, K, Bi, F, S)
    sim = _metrics_of_acc(cells, total, real_index, ur_denominator)
    width = np.where(lam_hi > lam_lo, lam_hi - lam_lo, 1.0)
    out = {}
    tails = [(1 - level) / 2, (1 + level) / 2]
    for k in names:
        mean, sd = sim[k].mean(axis=-1), sim[k].std(axis=-1, ddof=1)  # (Bo, K)
        pos = np.clip((lam_star[k] - lam_lo) / width, 0.0, 1.0) * (PREPIVOT_CANDIDATES - 1)
        j = np.clip(np.floor(np.nan_to_num(pos)).astype(np.int64), 0, PREPIVOT_CANDIDATES - 2)
        t = pos - j
        rows = np.arange(n_out)
        mu = (1 - t) * mean[rows, j] + t * mean[rows, j + 1]
        sigma = (1 - t) * sd[rows, j] + t * sd[rows, j + 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            root = (estimate[k] - mu) / sigma
        root = root[np.isfinite(root)]
        out[k] = tuple(np.quantile(root, tails)) if root.size >= 40 else (np.nan, np.nan)
    return out


def _metrics_of_acc(
    acc: np.ndarray, total: np.ndarray, real_index: int, ur_denominator: str | Iterable[str]
) -> dict[str, np.ndarray]:
    """The metrics of cell accuracies ``acc`` (..., F, S) with the data's ``total`` (F, S)
    samples per cell; an empty cell (total 0) has no correct sample, as in the counts."""
    total = np.broadcast_to(total, acc.shape)
    return metrics_from_cell_counts(
        np.where(total > 0, acc * total, 0.0), total, real_index, ur_denominator
    )


def _crossing(grid: np.ndarray, path: np.ndarray, value: float) -> np.ndarray:
    """Per row of ``path`` (R, G), the metric along ``grid``: the λ where it reaches
    ``value``, interpolated linearly between grid points (the path made non-decreasing
    first); NaN where it never does."""
    path = np.maximum.accumulate(np.nan_to_num(path, nan=-np.inf), axis=1)
    j = (path < value).sum(axis=1)  # first grid index at or above value
    ok = (j < grid.size) & np.isfinite(value)
    j = np.clip(j, 1, grid.size - 1)
    rows = np.arange(path.shape[0])
    a, b = path[rows, j - 1], path[rows, j]
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(b > a, (value - a) / (b - a), 0.0)
    lam = grid[j - 1] + np.clip(t, 0.0, 1.0) * (grid[j] - grid[j - 1])
    lam = np.where(path[:, 0] >= value, grid[0], lam)
    return np.where(ok, lam, np.nan)


def _accepted_range(
    grid: np.ndarray,
    theta: np.ndarray,
    lo_minus_obs: np.ndarray,
    hi_minus_obs: np.ndarray,
    fallback: bool = True,
) -> tuple[float, float] | None:
    """The range of ``theta`` (the metric at each grid λ) over the λ whose simulated quantiles
    hold the estimate, q_lo(λ) ≤ estimate ≤ q_hi(λ), with the set's ends interpolated
    linearly between grid points; its hull when it has gaps. When no λ holds the estimate
    (it lies below what even no gap gives, at the lower quantile) the interval runs from 0 to
    the metric at the λ that comes closest, or, without ``fallback``, there is none (None)."""
    slack = np.minimum(hi_minus_obs, -lo_minus_obs)  # >= 0: λ accepted
    ok = slack >= 0
    if not ok.any():
        if not fallback:
            return None
        j = int(np.argmax(slack))
        return 0.0, float(max(0.0, theta[j]))
    lams = list(grid[ok])
    for j in np.flatnonzero(ok[:-1] != ok[1:]):
        a, b = slack[j], slack[j + 1]
        lams.append(grid[j] + a / (a - b) * (grid[j + 1] - grid[j]))
    values = np.interp(np.array(lams), grid, theta)
    return float(max(0.0, values.min())), float(max(0.0, values.max()))


def _scaled_metrics(
    centre: np.ndarray,
    spread: np.ndarray,
    total: np.ndarray,
    real_index: int,
    ur_denominator: str | Iterable[str],
    noise: np.ndarray | None,
    lams: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The metrics of the cells ``centre + λ·spread (+ noise)``: (K,) or, with noise (B, F, S),
    (K, B) arrays for the K values ``lams``; the data's (λ = 1) values when lams is None."""
    if lams is None:
        acc = centre + spread
    else:
        acc = centre + np.asarray(lams, dtype=np.float64)[:, None, None] * spread
        if noise is not None:
            acc = acc[:, None] + noise[None]
    return _metrics_of_acc(acc, total, real_index, ur_denominator)
