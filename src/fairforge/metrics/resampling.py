"""Subject-level resampling of the fairness metrics (docs/metrics.md section 4).

FairFD shows that accuracy varies strongly between subjects, so samples of one subject are
not independent: the bootstrap resamples subjects with replacement within each group (all
of a subject's samples move together), and the jackknife leaves one subject out at a time.

Both only need per-subject sufficient statistics (:class:`SubjectStats`): the number of
correct and of all samples per (subject, approach). A resample is a vector of subject
multiplicities, so the cell counts of B resamples are one matrix product ``(B, N) @ (N, F*S)``
and every metric is computed for all B at once by
:func:`fairforge.metrics.fairness.metrics_from_cell_counts`, the same function that gives
the point estimates. AUC-based metrics need the samples' scores and are not resampled.
Intervals built on these replicates are in :mod:`.intervals` and :mod:`.inversion`, tests in
:mod:`.significance`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..columns import FAIRNESS_INPUT_COLUMNS
from ..seeding import rng_for
from .fairness import (
    Threshold,
    _check_frame,
    _select,
    encode_predictions,
    metrics_from_cell_counts,
)

# Resamples are drawn and evaluated in chunks of this many, bounding memory at
# CHUNK x n_subjects.
CHUNK = 128


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


def as_stats(
    data: SubjectStats | pd.DataFrame, threshold, approaches, groups, threshold_rule: str = ">"
) -> SubjectStats:
    """``data`` itself, or the statistics of a predictions frame (:func:`stats_from_frame`)."""
    return (
        data
        if isinstance(data, SubjectStats)
        else stats_from_frame(data, threshold, approaches, groups, threshold_rule)
    )


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
    stats = as_stats(data, threshold, approaches, groups, threshold_rule)
    reps, _ = _replicates_and_noise(stats, n_boot, seed, ur_denominator, indices)
    return reps


def bootstrap_noise(
    stats: SubjectStats,
    n_boot: int = 1000,
    seed: int = 0,
    ur_denominator: str | Iterable[str] = "one_plus_acc",
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The bootstrap's replicates (as :func:`bootstrap_replicates`) and its resampling error of
    the cell accuracies (B, F, S), the input of :func:`~fairforge.metrics.inversion.inverted_intervals`."""
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
    stats = as_stats(data, threshold, approaches, groups, threshold_rule)
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
