"""Group-fairness metrics of face-forgery detectors (docs/metrics.md sections 2 and 3).

Two families, computed from the same predictions:

* FairFD metrics over the accuracy matrix ``A[approach, group]`` (rows: ``real`` then the
  forgery methods): naive, approach-averaged (AA) and utility-regularized (UR) DPD, DEOdds,
  DEO and STD, plus AccGap. The functions accept one matrix ``(F, S)`` or a stack
  ``(B, F, S)`` (bootstrap and permutation replicates) and return scalars or ``(B,)`` arrays.
* Textbook sample-pooled metrics (fairlearn's definitions) over per-group confusion counts.

Key names of :func:`fairness_report` (and so of the rows of ``fairness_table.csv``):

* ``AUC``, ``AP``, ``EER``, ``ACC``: detection quality over all samples (Benchmark paper).
* ``MeanAcc`` and the paper's names ``DPD``, ``DEOdds``, ``DEO``, ``STD`` (naive),
  ``AADPD`` ... ``AASTD`` and ``AccGap``: FairFD metrics of the accuracy matrix.
* ``URDPD_<d>`` ... ``URSTD_<d>``: UR metrics, ``<d>`` naming the denominator:
  ``one_plus_acc`` (1 + mean accuracy of the approach; FairFD Table 3 and its code) or
  ``acc`` (the mean accuracy itself; equation 3, Table 5(b)).
* ``pooled_DPD``, ``pooled_DEOdds``, ``pooled_DEO``, ``pooled_STD``, ``pooled_AccGap``,
  ``pooled_AUCGap``: textbook metrics over all samples pooled.
* ``n_samples``.

Empty cells (an approach with no sample of a group) give NaN accuracies. The FairFD metrics
are then computed over the defined cells only (every mean, range and std leaves the empty
cell out), and :func:`metric_reasons` names the cells left out; a metric that no defined
cell supports is NaN with its reason. Textbook metrics of a group with one class (no real
or no fake sample) are NaN, with the reason.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..columns import FAIRNESS_INPUT_COLUMNS, REAL
from . import detection
from .conventions import DEFAULT_CONVENTIONS, UR_DENOMINATORS, Conventions, metric_name

FAIRFD_KEYS = (
    "DPD",
    "DEOdds",
    "DEO",
    "STD",
    "AADPD",
    "AADEOdds",
    "AADEO",
    "AASTD",
    "URDPD",
    "URDEOdds",
    "URDEO",
    "URSTD",
    "AccGap",
)
# Report order: naive (with AccGap, Table 1's overall gap) then AA; UR keys follow per denominator.
REPORT_ORDER_NON_UR = (
    "DPD",
    "DEOdds",
    "DEO",
    "STD",
    "AccGap",
    "AADPD",
    "AADEOdds",
    "AADEO",
    "AASTD",
)
# The count-based metrics of utility, not gaps between groups (a permutation of the groups
# leaves them unchanged): they get no inverted interval and no permutation test.
NOT_GAPS = ("ACC", "MeanAcc")

Threshold = float | Mapping[str, float]


# --------------------------------------------------------------------------- FairFD matrix


def _range(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.max(x, axis=axis) - np.min(x, axis=axis)


def _nan_range(x: np.ndarray, axis: int = -1) -> np.ndarray:
    if not np.isnan(x).any():  # the common case, several times faster than the nan-functions
        return _range(x, axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices stay NaN
        return np.nanmax(x, axis=axis) - np.nanmin(x, axis=axis)


def _nan_mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    if not np.isnan(x).any():
        return np.mean(x, axis=axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis)


def _nan_std(x: np.ndarray, axis: int = -1) -> np.ndarray:
    if not np.isnan(x).any():
        return np.std(x, axis=axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanstd(x, axis=axis)


def _check_denominator(ur_denominator: str) -> None:
    if ur_denominator not in UR_DENOMINATORS:
        raise ValueError(f"ur_denominator must be one of {UR_DENOMINATORS}, got {ur_denominator!r}")


def _fairfd_from_array(
    A: np.ndarray, real_index: int, ur_denominator: str
) -> dict[str, np.ndarray]:
    _check_denominator(ur_denominator)
    n_approaches = A.shape[-2]
    if not 0 <= real_index < n_approaches:
        raise ValueError(f"real row {real_index} outside the {n_approaches} approaches")
    fake = np.array([f for f in range(n_approaches) if f != real_index], dtype=np.int64)
    if fake.size == 0:
        raise ValueError("the accuracy matrix needs at least one forgery row besides the real row")
    # Empty cells (NaN) are left out of every mean, range and std: the metrics are those of
    # the defined cells (metric_reasons names the ones left out). Without empty cells these
    # are the plain definitions.
    real_row = A[..., real_index, :]
    overall = _nan_mean(A, axis=-2)  # per group, mean over approaches
    fake_mean = _nan_mean(A[..., fake, :], axis=-2)  # per group, mean over forgery approaches
    row_range = _nan_range(A)  # per approach
    row_std = _nan_std(A)
    row_mean = _nan_mean(A)
    denom = row_mean if ur_denominator == "acc" else 1.0 + row_mean
    with np.errstate(divide="ignore", invalid="ignore"):
        ur_range = row_range / denom
        ur_std = row_std / denom
    out = {
        "DPD": _nan_range(overall),
        "DEOdds": 0.5 * (_nan_range(real_row) + _nan_range(fake_mean)),
        "DEO": _nan_range(fake_mean),
        "STD": _nan_std(overall),
        "AADPD": _nan_mean(row_range),
        "AADEOdds": 0.5 * (row_range[..., real_index] + _nan_mean(row_range[..., fake])),
        "AADEO": _nan_mean(row_range[..., fake]),
        "AASTD": _nan_mean(row_std),
        "URDPD": _nan_mean(ur_range),
        "URDEOdds": 0.5 * (ur_range[..., real_index] + _nan_mean(ur_range[..., fake])),
        "URDEO": _nan_mean(ur_range[..., fake]),
        "URSTD": _nan_mean(ur_std),
        # Table 1's overall AccGap; equal to naive DPD because within an approach the
        # positive-rate gap and the accuracy gap coincide.
        "AccGap": _nan_range(overall),
    }
    return out


def _matrix_and_real_index(
    A: pd.DataFrame | np.ndarray, real_row: str | int
) -> tuple[np.ndarray, int]:
    if isinstance(A, pd.DataFrame):
        labels = list(A.index)
        if isinstance(real_row, str):
            if real_row not in labels:
                raise ValueError(f"real row {real_row!r} not among the approaches {labels}")
            return A.to_numpy(dtype=np.float64), labels.index(real_row)
        return A.to_numpy(dtype=np.float64), int(real_row)
    arr = np.asarray(A, dtype=np.float64)
    if arr.ndim not in (2, 3):
        raise ValueError(f"accuracy matrix must have shape (F, S) or (B, F, S), got {arr.shape}")
    # For bare arrays a row name cannot be looked up: the real row is row 0 unless an index is given.
    return arr, real_row if isinstance(real_row, (int, np.integer)) else 0


def fairfd_metrics(
    A: pd.DataFrame | np.ndarray, real_row: str | int = REAL, ur_denominator: str = "one_plus_acc"
) -> dict[str, float | np.ndarray]:
    """FairFD naive, AA and UR fairness metrics of an accuracy matrix (docs/metrics.md section 2).

    ``A`` is a DataFrame (rows: approaches, one of them ``real_row``; columns: groups), or an
    array of shape ``(F, S)`` or ``(B, F, S)`` whose real row is ``real_row`` if it is an int,
    else row 0. Population std (ddof=0); means over approaches are unweighted. Returns floats
    for one matrix and ``(B,)`` arrays for a stack.
    """
    arr, real_index = _matrix_and_real_index(A, real_row)
    out = _fairfd_from_array(arr, real_index, ur_denominator)
    if arr.ndim == 2:
        return {k: float(v) for k, v in out.items()}
    return out


def per_group_table(A: pd.DataFrame | np.ndarray) -> pd.DataFrame:
    """FairFD Table 1 layout: per approach and ``overall``, the group accuracies, mean, STD, AccGap.

    ``overall`` is the mean over approaches of each group's accuracy (unweighted, like the
    approach-averaged metrics); its STD and AccGap are the naive STD and DPD.
    """
    frame = A if isinstance(A, pd.DataFrame) else pd.DataFrame(np.asarray(A, dtype=np.float64))
    table = frame.astype(np.float64).copy()
    table.loc["overall"] = frame.to_numpy(dtype=np.float64).mean(axis=0)
    values = table.to_numpy()
    table["mean"] = values.mean(axis=1)
    table["STD"] = values.std(axis=1)
    table["AccGap"] = _range(values)
    table.index.name = frame.index.name or "approach"
    table.columns.name = None
    return table


# --------------------------------------------------------------------------- encoding inputs


def _encode(
    values: np.ndarray | pd.Series,
    categories: Sequence[str] | None,
    what: str,
    first: str | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Integer codes of ``values`` and their category names; -1 for values outside ``categories``.

    Without ``categories`` they are the sorted distinct values, ``first`` (if present) first.
    """
    codes, uniques = pd.factorize(
        np.asarray(values, dtype=object) if not isinstance(values, pd.Series) else values,
        use_na_sentinel=True,
    )
    uniques = [str(u) for u in uniques]
    if categories is None:
        if (codes < 0).any():
            raise ValueError(f"{what} has missing values")
        cats = sorted(uniques)
        if first is not None and first in cats:
            cats.remove(first)
            cats.insert(0, first)
    else:
        cats = [str(c) for c in categories]
        if len(set(cats)) != len(cats):
            raise ValueError(f"repeated {what} in {cats}")
    position = {c: i for i, c in enumerate(cats)}
    lookup = np.array([position.get(u, -1) for u in uniques] + [-1], dtype=np.int64)
    return lookup[codes], cats  # code -1 (missing) indexes the trailing -1


def threshold_array(threshold: Threshold, group: np.ndarray | pd.Series) -> np.ndarray | float:
    """A scalar threshold as is, or a per-sample array from a ``{group: threshold}`` mapping."""
    if not isinstance(threshold, Mapping):
        return float(threshold)
    codes, names = _encode(group, None, "group")
    missing = [g for g in names if g not in threshold]
    if missing:
        raise ValueError(f"no threshold for group(s) {missing}")
    per_code = np.array([float(threshold[g]) for g in names], dtype=np.float64)
    return per_code[codes]


@dataclass(frozen=True)
class EncodedPredictions:
    """Predictions reduced to integer codes and correctness, for counting with bincount."""

    approach_code: np.ndarray  # (n,), -1 outside the selected approaches / groups
    group_code: np.ndarray
    label: np.ndarray  # (n,) int 0/1
    correct: np.ndarray  # (n,) bool
    approaches: list[str]
    groups: list[str]
    real_index: int | None  # row of ``real`` among approaches

    @property
    def kept(self) -> np.ndarray:
        return (self.approach_code >= 0) & (self.group_code >= 0)

    def cell_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """``(correct, total)`` per (approach, group), shape (F, S)."""
        kept = self.kept
        n_f, n_s = len(self.approaches), len(self.groups)
        cell = self.approach_code[kept] * n_s + self.group_code[kept]
        total = np.bincount(cell, minlength=n_f * n_s).reshape(n_f, n_s).astype(np.float64)
        correct = np.bincount(cell, weights=self.correct[kept], minlength=n_f * n_s).reshape(
            n_f, n_s
        )
        return correct, total


def encode_predictions(
    label,
    method,
    group,
    score,
    threshold: Threshold = 0.5,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    threshold_rule: str = ">",
) -> EncodedPredictions:
    """Encode approaches and groups, and check the labels the accuracy matrix relies on.

    Every sample of ``real`` must have label 0 and every sample of another approach label 1,
    so that a row's accuracy is its true-negative or its true-positive rate.
    """
    y, s = detection._as_label_score(label, score)
    if len(method) != y.size or len(group) != y.size:
        raise ValueError("label, method, group and score must have equal lengths")
    a_code, a_names = _encode(method, approaches, "method", first=REAL)
    g_code, g_names = _encode(group, groups, "group")
    thr = threshold_array(threshold, group)
    correct = detection.predict_fake(s, thr, threshold_rule) == (y == 1)
    kept = (a_code >= 0) & (g_code >= 0)
    n_f = len(a_names)
    n_in = np.bincount(a_code[kept], minlength=n_f)
    n_fake = np.bincount(a_code[kept], weights=y[kept], minlength=n_f)
    for f, name in enumerate(a_names):
        if n_in[f] == 0:
            continue
        expected = 0 if name == REAL else 1
        if n_fake[f] != expected * n_in[f]:
            raise ValueError(
                f"approach {name!r} has samples labelled {1 - expected}; 'real' samples must have "
                f"label 0 and every forgery method label 1"
            )
    real_index = a_names.index(REAL) if REAL in a_names else None
    return EncodedPredictions(a_code, g_code, y, correct, a_names, g_names, real_index)


def accuracy_matrix(
    label,
    method,
    group,
    score,
    threshold: Threshold = 0.5,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    threshold_rule: str = ">",
) -> pd.DataFrame:
    """Accuracy per approach (rows: ``real`` first, then forgery methods sorted, or as given)
    and group (columns: sorted, or as given). A sample is predicted fake when score > threshold
    (>= with ``threshold_rule=">="``); ``threshold`` may be a ``{group: threshold}`` mapping.
    Empty cells are NaN."""
    enc = encode_predictions(
        label, method, group, score, threshold, approaches, groups, threshold_rule
    )
    correct, total = enc.cell_counts()
    with np.errstate(invalid="ignore", divide="ignore"):
        values = correct / total
    return pd.DataFrame(
        values,
        index=pd.Index(enc.approaches, name="approach"),
        columns=pd.Index(enc.groups, name="group"),
    )


# --------------------------------------------------------------------------- textbook metrics


def _confusion(y: np.ndarray, pred: np.ndarray, codes: np.ndarray, n_codes: int) -> np.ndarray:
    """Counts ``(n_codes, 4)`` of TN, FP, FN, TP per code (codes < 0 ignored)."""
    keep = codes >= 0
    cell = codes[keep] * 4 + 2 * y[keep] + pred[keep].astype(np.int64)
    return np.bincount(cell, minlength=4 * n_codes).reshape(n_codes, 4).astype(np.float64)


def rates_from_confusion(tn, fp, fn, tp) -> dict[str, np.ndarray]:
    """Per-group rates from confusion counts of any (broadcastable) shape; NaN when undefined."""
    tn, fp, fn, tp = (np.asarray(x, dtype=np.float64) for x in (tn, fp, fn, tp))
    n = tn + fp + fn + tp
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "PR": (tp + fp) / n,
            "TPR": tp / (tp + fn),
            "FPR": fp / (fp + tn),
            "TNR": tn / (fp + tn),
            "FNR": fn / (tp + fn),
            "Acc": (tp + tn) / n,
        }


def pooled_from_confusion(tn, fp, fn, tp) -> dict[str, np.ndarray]:
    """Textbook DPD, DEOdds, DEO, STD, AccGap over the last axis (groups) of confusion counts."""
    r = rates_from_confusion(tn, fp, fn, tp)
    deo = _range(r["TPR"])
    return {
        "DPD": _range(r["PR"]),
        "DEOdds": 0.5 * (deo + _range(r["FPR"])),
        "DEO": deo,
        "STD": r["Acc"].std(axis=-1),
        "AccGap": _range(r["Acc"]),
    }


def group_rates(
    y_true,
    y_pred_or_score,
    group,
    threshold: Threshold = 0.5,
    groups: Sequence[str] | None = None,
    with_auc: bool = True,
    threshold_rule: str = ">",
) -> pd.DataFrame:
    """Per group: counts, confusion counts, PR, TPR, FPR, TNR, FNR, Acc and AUC.

    Hard 0/1 predictions can be passed as scores: with a threshold in [0, 1) they stay as
    they are. AUC is NaN for a group with one class (and for all when ``with_auc`` is False).
    """
    y, s = detection._as_label_score(y_true, y_pred_or_score)
    codes, names = _encode(group, groups, "group")
    pred = detection.predict_fake(s, threshold_array(threshold, group), threshold_rule)
    conf = _confusion(y, pred, codes, len(names))
    tn, fp, fn, tp = conf.T
    table = pd.DataFrame(
        {
            "n": tn + fp + fn + tp,
            "n_pos": tp + fn,
            "n_neg": tn + fp,
            "TP": tp,
            "FP": fp,
            "TN": tn,
            "FN": fn,
        },
        index=pd.Index(names, name="group"),
    )
    for key, value in rates_from_confusion(tn, fp, fn, tp).items():
        table[key] = value
    table["AUC"] = _group_auc(y, s, codes, len(names)) if with_auc else np.nan
    return table


def _group_auc(y: np.ndarray, s: np.ndarray, codes: np.ndarray, n_codes: int) -> np.ndarray:
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(n_codes + 1))
    out = np.full(n_codes, np.nan)
    for g in range(n_codes):
        idx = order[bounds[g] : bounds[g + 1]]
        if idx.size:
            out[g] = detection.auc(y[idx], s[idx])
    return out


def textbook_metrics(
    y_true,
    y_pred_or_score,
    group,
    threshold: Threshold = 0.5,
    groups: Sequence[str] | None = None,
    threshold_rule: str = ">",
) -> dict[str, float]:
    """Sample-pooled DPD, DEOdds (mean of the TPR and FPR gaps), DEO, STD, AccGap and AUCGap.

    Agrees with fairlearn's ``demographic_parity_difference``,
    ``equalized_odds_difference(agg="mean")`` and the range of ``true_positive_rate``.
    """
    rates = group_rates(
        y_true, y_pred_or_score, group, threshold, groups, threshold_rule=threshold_rule
    )
    out = pooled_from_confusion(
        rates["TN"].to_numpy(),
        rates["FP"].to_numpy(),
        rates["FN"].to_numpy(),
        rates["TP"].to_numpy(),
    )
    out = {k: float(v) for k, v in out.items()}
    out["AUCGap"] = float(_range(rates["AUC"].to_numpy()))
    return out


# --------------------------------------------------------------------------- from cell counts


def _denominators(ur_denominator: str | Iterable[str]) -> tuple[str, ...]:
    dens = (ur_denominator,) if isinstance(ur_denominator, str) else tuple(ur_denominator)
    for d in dens:
        _check_denominator(d)
    if not dens:
        raise ValueError("at least one ur_denominator is needed")
    return dens


def metrics_from_cell_counts(
    correct: np.ndarray,
    total: np.ndarray,
    real_index: int,
    ur_denominator: str | Iterable[str] = "one_plus_acc",
) -> dict[str, np.ndarray]:
    """Every count-based metric of :func:`fairness_report` from per-cell counts.

    ``correct`` and ``total`` have shape (F, S) or (B, F, S); row ``real_index`` holds real
    samples (label 0) and every other row forgeries (label 1), so the pooled confusion counts
    of a group are sums of cells: TN = correct real, FP = wrong real, TP = correct fakes,
    FN = wrong fakes. This is the single code path of the point estimates, the bootstrap and
    the permutation test.
    """
    correct = np.asarray(correct, dtype=np.float64)
    total = np.asarray(total, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        A = correct / total
    dens = _denominators(ur_denominator)
    fake = np.ones(correct.shape[-2], dtype=bool)
    fake[real_index] = False
    tn = correct[..., real_index, :]
    fp = total[..., real_index, :] - tn
    tp = correct[..., fake, :].sum(axis=-2)
    fn = total[..., fake, :].sum(axis=-2) - tp
    n_all = total.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        out: dict[str, np.ndarray] = {
            "ACC": correct.sum(axis=(-2, -1)) / n_all,
            "MeanAcc": _nan_mean(A.reshape(*A.shape[:-2], -1)),
        }
    for i, den in enumerate(dens):
        fair = _fairfd_from_array(A, real_index, den)
        if i == 0:
            out.update({k: fair[k] for k in REPORT_ORDER_NON_UR})
        out.update({metric_name(k, den): fair[k] for k in FAIRFD_KEYS if k.startswith("UR")})
    for key, value in pooled_from_confusion(tn, fp, fn, tp).items():
        out[f"pooled_{key}"] = value
    return out


# --------------------------------------------------------------------------- reasons


def metric_reasons(
    report: Mapping[str, float],
    total: np.ndarray,
    n_fake: np.ndarray,
    real_index: int,
    approaches: Sequence[str],
    groups: Sequence[str],
) -> dict[str, str]:
    """Why a metric of ``report`` is NaN, or which cells it was computed without.

    ``total`` (F, S): samples per cell; ``n_fake`` (S,): fake samples per group. Keys: the
    metrics concerned; metrics computed as defined are absent.
    """
    total = np.asarray(total, dtype=np.float64)
    n_fake = np.asarray(n_fake, dtype=np.float64)
    n_group = total.sum(axis=0)
    reasons: dict[str, list[str]] = {}
    empty = [
        f"({approaches[f]}, {groups[g]})"
        for f, g in zip(*np.nonzero(total == 0))
        if n_group[g] > 0  # a group without any sample is not a reported group
    ]
    matrix_keys = [k for k in report if k == "MeanAcc" or k.split("_")[0] in FAIRFD_KEYS]
    if empty:
        said = f"empty cell(s) {', '.join(empty)}"
        for key in matrix_keys:
            reasons.setdefault(key, []).append(
                f"undefined: {said}"
                if not np.isfinite(report[key])
                else f"computed without the {said}"
            )
    only_real = [groups[g] for g in range(len(groups)) if n_group[g] > 0 and n_fake[g] == 0]
    only_fake = [
        groups[g] for g in range(len(groups)) if n_group[g] > 0 and n_fake[g] == n_group[g]
    ]
    one_class = []
    if only_real:
        one_class.append(f"group(s) {', '.join(only_real)} have no fake sample (TPR undefined)")
    if only_fake:
        one_class.append(f"group(s) {', '.join(only_fake)} have no real sample (FPR undefined)")
    for key in ("pooled_DEOdds", "pooled_DEO", "pooled_AUCGap"):
        if key in report and not np.isfinite(report[key]) and one_class:
            reasons.setdefault(key, []).extend(one_class)
    for key in ("AUC", "AP", "EER"):
        if key in report and not np.isfinite(report[key]):
            reasons.setdefault(key, []).append("one class only over all samples")
    for key, value in report.items():
        if not np.isfinite(value) and key not in reasons:
            reasons[key] = ["undefined: no sample supports it"]
    return {k: "; ".join(v) for k, v in reasons.items()}


def fairness_reasons(
    predictions: pd.DataFrame,
    report: Mapping[str, float],
    conventions: Conventions = DEFAULT_CONVENTIONS,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
) -> dict[str, str]:
    """:func:`metric_reasons` of one detector's predictions and its :func:`fairness_report`
    under the same ``conventions``."""
    frame = _select(predictions, approaches, groups)
    enc = encode_predictions(
        frame["label"],
        frame["method"],
        frame["group"],
        frame["score"],
        conventions.threshold,
        approaches,
        groups,
        conventions.threshold_rule,
    )
    _, total = enc.cell_counts()
    kept = enc.kept
    n_fake = np.bincount(enc.group_code[kept], weights=enc.label[kept], minlength=len(enc.groups))
    return metric_reasons(report, total, n_fake, enc.real_index, enc.approaches, enc.groups)


# --------------------------------------------------------------------------- frames


def _check_frame(predictions: pd.DataFrame, needed: Sequence[str] = FAIRNESS_INPUT_COLUMNS) -> None:
    missing = [c for c in needed if c not in predictions.columns]
    if missing:
        raise ValueError(f"predictions lack column(s) {missing}")
    if "sample_id" in predictions.columns and predictions["sample_id"].duplicated().any():
        raise ValueError(
            "repeated sample_id: the predictions mix several detectors, variants or "
            "datasets; select one (or use fairness_table with by=...)"
        )


def _select(
    predictions: pd.DataFrame, approaches: Sequence[str] | None, groups: Sequence[str] | None
) -> pd.DataFrame:
    keep = np.ones(len(predictions), dtype=bool)
    if approaches is not None:
        keep &= predictions["method"].astype(str).isin(list(approaches)).to_numpy()
    if groups is not None:
        keep &= predictions["group"].astype(str).isin(list(groups)).to_numpy()
    return predictions if keep.all() else predictions.loc[keep]


def fairness_report(
    predictions: pd.DataFrame,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
) -> dict[str, float]:
    """All detection, FairFD and pooled fairness metrics of one detector's predictions.

    ``predictions`` has columns label, method, group, score (and usually sample_id,
    subject_id). ``approaches`` / ``groups`` restrict the samples (e.g. FairFD Table 5(b)
    uses ``["real", "faceswap"]``); ``conventions``: the threshold (a float or a
    ``{group: threshold}`` mapping), its rule, the EER method and the UR denominator(s)
    (:class:`~fairforge.metrics.conventions.Conventions`). Key names: see the module
    docstring.
    """
    c = conventions
    _check_frame(predictions)
    frame = _select(predictions, approaches, groups)
    enc = encode_predictions(
        frame["label"],
        frame["method"],
        frame["group"],
        frame["score"],
        c.threshold,
        approaches,
        groups,
        c.threshold_rule,
    )
    if enc.real_index is None:
        raise ValueError("the predictions have no 'real' approach; FairFD metrics need one")
    correct, total = enc.cell_counts()
    counted = metrics_from_cell_counts(correct, total, enc.real_index, c.ur_denominator)
    score = frame["score"].to_numpy(dtype=np.float64)
    det = detection.detection_metrics(enc.label, score, eer=c.eer)
    group_auc = _group_auc(enc.label, score, enc.group_code, len(enc.groups))
    report = {"AUC": det["AUC"], "AP": det["AP"], "EER": det["EER"]}
    report.update({k: float(v) for k, v in counted.items()})
    report["pooled_AUCGap"] = float(_range(group_auc))
    report["n_samples"] = float(len(frame))
    return report


def _by_columns(by: str | Sequence[str] | None) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else list(by)


def _split_by(predictions: pd.DataFrame, by: str | Sequence[str] | None):
    cols = _by_columns(by)
    if not cols:
        yield "all", predictions
        return
    missing = [c for c in cols if c not in predictions.columns]
    if missing:
        raise ValueError(f"predictions lack the by column(s) {missing}")
    key = cols[0] if len(cols) == 1 else cols
    yield from predictions.groupby(key, sort=True, observed=True)


def fairness_table(
    predictions: pd.DataFrame,
    by: str | Sequence[str] | None = "detector",
    conventions: Conventions = DEFAULT_CONVENTIONS,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Wide table of :func:`fairness_report`: one row per metric, one column per ``by`` value."""
    reports = {
        name: fairness_report(part, conventions, approaches, groups)
        for name, part in _split_by(predictions, by)
    }
    table = pd.DataFrame(reports)
    table.index.name = "metric"
    if len(_by_columns(by)) > 1:
        table.columns.names = _by_columns(by)
    else:
        table.columns.name = _by_columns(by)[0] if by else None
    return table


def per_group_long(
    predictions: pd.DataFrame,
    by: str | Sequence[str] | None = "detector",
    conventions: Conventions = DEFAULT_CONVENTIONS,
    approaches: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Long table: per ``by`` value, approach and group the accuracy, counts and rates, at
    ``conventions.threshold`` under its rule.

    Rows with approach ``all`` pool every approach: their accuracy is the sample-pooled
    accuracy of the group and their rates (PR, TPR, FPR, TNR, FNR, AUC) are the textbook
    per-group rates. Within a single approach one label class is present, so AUC is NaN and
    either TPR/FNR (real) or FPR/TNR (forgeries) is.
    """
    cols = _by_columns(by)
    frames = []
    for name, part in _split_by(predictions, by):
        _check_frame(part)
        part = _select(part, approaches, groups)
        enc = encode_predictions(
            part["label"],
            part["method"],
            part["group"],
            part["score"],
            conventions.threshold,
            approaches,
            groups,
            conventions.threshold_rule,
        )
        score = part["score"].to_numpy(dtype=np.float64)
        pred = enc.correct == (enc.label == 1)  # predicted fake, recovered from correctness
        n_f, n_s = len(enc.approaches), len(enc.groups)
        kept = enc.kept
        cell = np.where(kept, enc.approach_code * n_s + enc.group_code, -1)
        conf = np.vstack(
            [
                _confusion(enc.label, pred, cell, n_f * n_s),
                _confusion(enc.label, pred, np.where(kept, enc.group_code, -1), n_s),
            ]
        )
        tn, fp, fn, tp = conf.T
        rows = pd.DataFrame(
            {
                "approach": np.r_[np.repeat(enc.approaches, n_s), np.repeat("all", n_s)],
                "group": np.tile(enc.groups, n_f + 1),
                "n": tn + fp + fn + tp,
                "n_correct": tn + tp,
            }
        )
        rates = rates_from_confusion(tn, fp, fn, tp)
        rows["accuracy"] = rates.pop("Acc")
        for key, value in rates.items():
            rows[key] = value
        rows["AUC"] = np.r_[
            np.full(n_f * n_s, np.nan),
            _group_auc(enc.label, score, np.where(kept, enc.group_code, -1), n_s),
        ]
        names = name if isinstance(name, tuple) else (name,)
        for col, value in zip(cols, names):
            rows.insert(cols.index(col), col, value)
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)
