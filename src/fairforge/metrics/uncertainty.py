"""Subject-level uncertainty of the fairness metrics (docs/metrics.md section 4).

FairFD shows that accuracy varies strongly between subjects, so samples of one subject are
not independent: the bootstrap resamples subjects with replacement within each group (all
of a subject's samples move together) and the permutation test shuffles group labels
across subjects.

Both only need per-subject sufficient statistics: the number of correct and of all samples
per (subject, approach). A resample is a vector of subject multiplicities, so the cell
counts of B resamples are one matrix product ``(B, N) @ (N, F*S)`` and every metric is
computed for all B at once by :func:`fairforge.metrics.fairness.metrics_from_cell_counts`,
the same function that gives the point estimates. AUC-based metrics need the samples' scores
and are not resampled.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..columns import FAIRNESS_INPUT_COLUMNS
from ..seeding import rng_for
from .fairness import (
    Threshold,
    _by_columns,
    _check_frame,
    _select,
    _split_by,
    encode_predictions,
    metrics_from_cell_counts,
)

# Resamples are drawn and evaluated in chunks of this many, bounding memory at
# CHUNK x n_subjects.
CHUNK = 128
NOT_GAPS = ("ACC", "MeanAcc")  # utility, invariant under group permutation


@dataclass(frozen=True)
class SubjectStats:
    """Per-subject counts of correct and of all samples, per approach."""

    subject_ids: np.ndarray  # (N,) sorted
    subject_group: np.ndarray  # (N,) index into groups
    groups: tuple[str, ...]
    approaches: tuple[str, ...]
    real_index: int
    correct: np.ndarray  # (N, F) float64
    total: np.ndarray  # (N, F) float64

    @property
    def n_subjects(self) -> int:
        return len(self.subject_ids)

    def _by_group(self, counts: np.ndarray) -> np.ndarray:
        """(N, F*S): each subject's counts placed in its own group's columns."""
        n, n_f, n_s = self.n_subjects, len(self.approaches), len(self.groups)
        spread = np.zeros((n, n_f, n_s))
        spread[np.arange(n), :, self.subject_group] = counts
        return spread.reshape(n, n_f * n_s)

    def cell_counts(self, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(correct, total)`` per (approach, group): shape (F, S), or (B, F, S) for subject
        multiplicities ``weights`` of shape (B, N)."""
        n_f, n_s = len(self.approaches), len(self.groups)
        if weights is None:
            weights = np.ones(self.n_subjects)
        weights = np.asarray(weights, dtype=np.float64)
        lead = weights.shape[:-1]
        correct = np.zeros((*lead, n_f, n_s))
        total = np.zeros((*lead, n_f, n_s))
        # one product per group over its own subjects: the F·S-wide product of the spread
        # counts (_by_group) would multiply mostly zeros
        for g in range(n_s):
            members = np.flatnonzero(self.subject_group == g)
            if members.size:
                w = weights[..., members]
                correct[..., g] = w @ self.correct[members]
                total[..., g] = w @ self.total[members]
        return correct, total

    def cell_counts_for_assignment(
        self, subject_group: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Cell counts (B, F, S) when subjects take the groups ``subject_group`` (B, N)."""
        onehot = (subject_group[:, :, None] == np.arange(len(self.groups))).astype(np.float64)
        onehot_t = onehot.transpose(0, 2, 1)  # (B, S, N)
        return (
            (onehot_t @ self.correct).transpose(0, 2, 1),
            (onehot_t @ self.total).transpose(0, 2, 1),
        )


def subject_stats(
    label,
    method,
    group,
    subject_id,
    score,
    threshold: Threshold = 0.5,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    threshold_rule: str = ">",
) -> SubjectStats:
    """Sufficient statistics of the subject bootstrap. Each subject must lie in one group."""
    enc = encode_predictions(
        label, method, group, score, threshold, approaches, groups, threshold_rule
    )
    if enc.real_index is None:
        raise ValueError("the predictions have no 'real' approach; FairFD metrics need one")
    if len(subject_id) != enc.label.size:
        raise ValueError("subject_id must have one entry per prediction")
    kept = enc.kept
    subjects = pd.Series(
        np.asarray(subject_id, dtype=object)[kept]
        if not isinstance(subject_id, pd.Series)
        else subject_id[kept]
    )
    if subjects.isna().any():
        raise ValueError("subject_id has missing values")
    s_code, s_ids = pd.factorize(subjects.astype(str), sort=True)
    n, n_f, n_s = len(s_ids), len(enc.approaches), len(enc.groups)
    g_code = enc.group_code[kept]
    in_group = np.bincount(s_code * n_s + g_code, minlength=n * n_s).reshape(n, n_s) > 0
    spanning = np.flatnonzero(in_group.sum(axis=1) > 1)
    if spanning.size:
        raise ValueError(
            f"subjects in more than one group: {list(np.asarray(s_ids)[spanning[:5]])}"
        )
    cell = s_code * n_f + enc.approach_code[kept]
    total = np.bincount(cell, minlength=n * n_f).reshape(n, n_f).astype(np.float64)
    correct = np.bincount(cell, weights=enc.correct[kept], minlength=n * n_f).reshape(n, n_f)
    return SubjectStats(
        np.asarray(s_ids, dtype=object),
        in_group.argmax(axis=1),
        tuple(enc.groups),
        tuple(enc.approaches),
        enc.real_index,
        correct,
        total,
    )


def stats_from_frame(
    predictions: pd.DataFrame,
    threshold: Threshold = 0.5,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    threshold_rule: str = ">",
) -> SubjectStats:
    """:func:`subject_stats` of a predictions frame (columns label, method, group, subject_id, score)."""
    _check_frame(predictions, (*FAIRNESS_INPUT_COLUMNS, "subject_id"))
    frame = _select(predictions, approaches, groups)
    return subject_stats(
        frame["label"],
        frame["method"],
        frame["group"],
        frame["subject_id"],
        frame["score"],
        threshold,
        approaches,
        groups,
        threshold_rule,
    )


def _as_stats(
    data: SubjectStats | pd.DataFrame, threshold, approaches, groups, threshold_rule: str = ">"
) -> SubjectStats:
    return (
        data
        if isinstance(data, SubjectStats)
        else stats_from_frame(data, threshold, approaches, groups, threshold_rule)
    )


# --------------------------------------------------------------------------- bootstrap


def _index_chunks(stats: SubjectStats, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    rng = rng_for("fairforge.metrics.bootstrap", seed)
    members = [np.flatnonzero(stats.subject_group == g) for g in range(len(stats.groups))]
    for start in range(0, n_boot, CHUNK):
        # Always a full chunk, truncated: the first resamples are the same whatever n_boot.
        idx = np.empty((CHUNK, stats.n_subjects), dtype=np.int64)
        for m in members:
            if m.size:
                idx[:, m] = m[rng.integers(0, m.size, size=(CHUNK, m.size))]
        yield idx[: min(CHUNK, n_boot - start)]


def _count_chunks(stats: SubjectStats, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """The subject multiplicities (b, N) of :func:`_index_chunks`'s resamples, from the same
    draws, counted per group without building the index matrix."""
    rng = rng_for("fairforge.metrics.bootstrap", seed)
    members = [np.flatnonzero(stats.subject_group == g) for g in range(len(stats.groups))]
    offsets = np.arange(CHUNK)[:, None]
    for start in range(0, n_boot, CHUNK):
        counts = np.zeros((CHUNK, stats.n_subjects))
        for m in members:
            if m.size:
                draws = rng.integers(0, m.size, size=(CHUNK, m.size)) + offsets * m.size
                counts[:, m] = np.bincount(draws.ravel(), minlength=CHUNK * m.size).reshape(
                    CHUNK, m.size
                )
        yield counts[: min(CHUNK, n_boot - start)]


def subject_resample_indices(stats: SubjectStats, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """(B, N) subject indices of the bootstrap: row b holds, in the positions of each group's
    subjects, as many draws with replacement from that group's subjects."""
    chunks = list(_index_chunks(stats, n_boot, seed))
    return np.vstack(chunks) if chunks else np.empty((0, stats.n_subjects), dtype=np.int64)


def counts_from_indices(indices: np.ndarray, n_subjects: int) -> np.ndarray:
    """(B, N) multiplicity of each subject in each resample."""
    indices = np.asarray(indices, dtype=np.int64)
    n_boot = indices.shape[0]
    flat = (indices + (np.arange(n_boot) * n_subjects)[:, None]).ravel()
    return (
        np.bincount(flat, minlength=n_boot * n_subjects)
        .reshape(n_boot, n_subjects)
        .astype(np.float64)
    )


def _replicate_cells(
    stats: SubjectStats, n_boot: int, seed: int, indices: np.ndarray | None = None
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per chunk of resamples: cell counts ``(correct, total)`` (b, F, S) and ``dropped`` (b,),
    True for a resample whose empty cells differ from the data's."""
    data_empty = stats.cell_counts()[1] == 0
    chunks = (
        _count_chunks(stats, n_boot, seed)
        if indices is None
        else (
            counts_from_indices(indices[i : i + CHUNK], stats.n_subjects)
            for i in range(0, len(indices), CHUNK)
        )
    )
    for counts in chunks:
        correct, total = stats.cell_counts(counts)
        yield correct, total, ((total == 0) != data_empty).any(axis=(-2, -1))


def bootstrap_replicates(
    data: SubjectStats | pd.DataFrame,
    n_boot: int = 1000,
    seed: int = 0,
    ur_denominator: str | Iterable[str] = "one_plus_acc",
    indices: np.ndarray | None = None,
    threshold: Threshold = 0.5,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    *,
    threshold_rule: str = ">",
) -> dict[str, np.ndarray]:
    """Every count-based metric for each of ``n_boot`` subject resamples: name -> (B,) array.

    ``indices`` (B, N) replaces the seeded draws (see :func:`subject_resample_indices`).
    A resample whose empty cells differ from the data's (a cell the data fill left empty, as
    when every resampled subject of a group lacks an approach) is dropped: every metric is
    NaN for it, so that all valid replicates measure the same cells as the estimate.
    """
    stats = _as_stats(data, threshold, approaches, groups, threshold_rule)
    reps, _ = _replicates_and_noise(stats, n_boot, seed, ur_denominator, indices)
    return reps


def bootstrap_noise(
    stats: SubjectStats,
    n_boot: int = 1000,
    seed: int = 0,
    ur_denominator: str | Iterable[str] = "one_plus_acc",
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The bootstrap's replicates (as :func:`bootstrap_replicates`) and its resampling error of
    the cell accuracies (B, F, S), the input of :func:`inverted_intervals`."""
    return _replicates_and_noise(stats, n_boot, seed, ur_denominator)


def _replicates_and_noise(
    stats: SubjectStats,
    n_boot: int,
    seed: int,
    ur_denominator: str | Iterable[str],
    indices: np.ndarray | None = None,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The metrics of every resample (NaN where dropped) and the resampled cell accuracies
    minus the data's, (B, F, S) (NaN rows where dropped, 0 in cells the data leave empty)."""
    correct0, total0 = stats.cell_counts()
    with np.errstate(invalid="ignore", divide="ignore"):
        acc0 = correct0 / total0
    parts: dict[str, list[np.ndarray]] = {}
    noise = []
    for correct, total, dropped in _replicate_cells(stats, n_boot, seed, indices):
        for key, value in metrics_from_cell_counts(
            correct, total, stats.real_index, ur_denominator
        ).items():
            parts.setdefault(key, []).append(np.where(dropped, np.nan, value))
        with np.errstate(invalid="ignore", divide="ignore"):
            dev = np.where(total0 > 0, correct / total - acc0, 0.0)
        noise.append(np.where(dropped[:, None, None], np.nan, dev))
    if not parts:
        raise ValueError("n_boot must be positive")
    return {k: np.concatenate(v) for k, v in parts.items()}, np.concatenate(noise)


def point_estimates(
    data: SubjectStats | pd.DataFrame,
    ur_denominator: str | Iterable[str] = "one_plus_acc",
    threshold: Threshold = 0.5,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    *,
    threshold_rule: str = ">",
) -> dict[str, float]:
    """The count-based metrics of the data itself (equal to :func:`fairness_report`'s)."""
    stats = _as_stats(data, threshold, approaches, groups, threshold_rule)
    correct, total = stats.cell_counts()
    return {
        k: float(v)
        for k, v in metrics_from_cell_counts(
            correct, total, stats.real_index, ur_denominator
        ).items()
    }


def jackknife_estimates(
    stats: SubjectStats, ur_denominator: str | Iterable[str] = "one_plus_acc"
) -> dict[str, np.ndarray]:
    """Every count-based metric with one subject left out, for each subject: name -> (N,).

    Leaving subject i out subtracts its counts from its group's cells, so the N estimates
    are one stack of cell counts. A leave-one-out that empties a cell the data fill is NaN
    (as in :func:`bootstrap_replicates`).
    """
    correct, total = stats.cell_counts()
    own_correct = stats._by_group(stats.correct).reshape(stats.n_subjects, *correct.shape)
    own_total = stats._by_group(stats.total).reshape(stats.n_subjects, *total.shape)
    loo_correct, loo_total = correct[None] - own_correct, total[None] - own_total
    dropped = ((loo_total <= 0) != (total == 0)[None]).any(axis=(-2, -1))
    return {
        k: np.where(dropped, np.nan, v)
        for k, v in metrics_from_cell_counts(
            loo_correct, np.maximum(loo_total, 0.0), stats.real_index, ur_denominator
        ).items()
    }


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
    total = np.broadcast_to(total, acc.shape)
    # an empty cell (total 0, accuracy NaN) has no correct sample, as in the data's counts
    return metrics_from_cell_counts(
        np.where(total > 0, acc * total, 0.0), total, real_index, ur_denominator
    )


def bootstrap_intervals(
    data: SubjectStats | pd.DataFrame,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    ur_denominator: str | Iterable[str] = "one_plus_acc",
    threshold: Threshold = 0.5,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    *,
    threshold_rule: str = ">",
) -> pd.DataFrame:
    """Bias-corrected subject-bootstrap intervals of every count-based metric.

    One row per metric: ``estimate`` (plug-in), ``estimate_bc`` (bias-corrected: 2·estimate
    − mean of the valid replicates), ``ci_low``/``ci_high`` (the reported interval: for a
    gap the test inversion, :func:`inverted_intervals`; for ``ACC`` and
    ``MeanAcc``, and a gap without any spread, the basic interval; docs/metrics.md section 4
    has their measured coverage), ``basic_low``/``basic_high`` (basic bootstrap,
    :func:`basic_interval`, floored at 0 since every metric here is non-negative),
    ``bca_low``/``bca_high`` (BCa, :func:`bca_interval`) and ``pct_low``/``pct_high`` (plain
    percentile), for comparison, ``n_valid`` (replicates kept), ``n_boot``,
    ``dropped_share`` (replicates dropped because a cell changed emptiness,
    :func:`bootstrap_replicates`).
    """
    if not 0 < level < 1:
        raise ValueError("level must lie in (0, 1)")
    stats = _as_stats(data, threshold, approaches, groups, threshold_rule)
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
    ur_denominator: str | Iterable[str] = "one_plus_acc",
    threshold: Threshold = 0.5,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    *,
    threshold_rule: str = ">",
) -> pd.DataFrame:
    """Long table of :func:`bootstrap_intervals`, one block per ``by`` value.

    The same seed gives every detector the same subject resamples (paired intervals).
    """
    cols = _by_columns(by)
    frames = []
    for name, part in _split_by(predictions, by):
        table = bootstrap_intervals(
            part,
            n_boot,
            seed,
            level,
            ur_denominator,
            threshold,
            approaches,
            groups,
            threshold_rule=threshold_rule,
        ).reset_index()
        names = name if isinstance(name, tuple) else (name,)
        for i, col in enumerate(cols):
            table.insert(i, col, names[i])
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- permutation test


def permutation_pvalues(
    data: SubjectStats | pd.DataFrame,
    n_perm: int = 1000,
    seed: int = 0,
    ur_denominator: str | Iterable[str] = "one_plus_acc",
    threshold: Threshold = 0.5,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    *,
    threshold_rule: str = ">",
) -> dict[str, float]:
    """One-sided p-values that each gap metric is larger than chance.

    Under the null, group labels are exchangeable across subjects: each replicate shuffles
    the subjects' groups (group sizes kept, a subject's samples staying together).
    p = (1 + #{replicate >= observed}) / (1 + #valid replicates).
    """
    if n_perm < 1:
        raise ValueError("n_perm must be positive")
    stats = _as_stats(data, threshold, approaches, groups, threshold_rule)
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
    ur_denominator: str | Iterable[str] = "one_plus_acc",
    threshold: Threshold = 0.5,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    *,
    threshold_rule: str = ">",
) -> float:
    """The permutation p-value of one metric (a key of :func:`permutation_pvalues`)."""
    pvalues = permutation_pvalues(
        data,
        n_perm,
        seed,
        ur_denominator,
        threshold,
        approaches,
        groups,
        threshold_rule=threshold_rule,
    )
    if metric not in pvalues:
        raise ValueError(f"unknown gap metric {metric!r}; choose from {sorted(pvalues)}")
    return pvalues[metric]


# --------------------------------------------------------------------------- paired comparisons


def align_stats(*all_stats: SubjectStats) -> list[SubjectStats]:
    """The statistics of several detectors over the union of their subjects, in one order,
    so that one resample of subject indices means the same subjects for each (a subject a
    detector has no prediction of gets zero counts). Groups and approaches must agree."""
    first = all_stats[0]
    for other in all_stats[1:]:
        if other.groups != first.groups or other.approaches != first.approaches:
            raise ValueError(
                "paired comparisons need the same groups and approaches: "
                f"{first.groups}/{first.approaches} against {other.groups}/{other.approaches}"
            )
    group_of: dict = {}
    for st in all_stats:
        for sid, g in zip(st.subject_ids, st.subject_group):
            if group_of.setdefault(sid, g) != g:
                raise ValueError(f"subject {sid!r} is in different groups for two detectors")
    ids = np.array(sorted(group_of), dtype=object)
    position = {sid: i for i, sid in enumerate(ids)}
    groups = np.array([group_of[s] for s in ids], dtype=np.int64)
    out = []
    for st in all_stats:
        rows = np.fromiter((position[s] for s in st.subject_ids), np.int64, len(st.subject_ids))
        correct = np.zeros((len(ids), len(st.approaches)))
        total = np.zeros_like(correct)
        correct[rows], total[rows] = st.correct, st.total
        out.append(
            SubjectStats(ids, groups, st.groups, st.approaches, st.real_index, correct, total)
        )
    return out


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
    interval of the difference, :func:`basic_interval`), ``p_value`` (two-sided, H0: no
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
