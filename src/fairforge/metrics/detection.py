"""Detection metrics of the Benchmark paper: AUC, ACC, AP and EER, at frame and video level.

AUC and AP follow scikit-learn's definitions exactly (trapezoidal ROC area; AP as the
step-wise sum of precision times recall increments) and agree with ``roc_auc_score`` and
``average_precision_score``. Ranking metrics of inputs with a single class are NaN, without
a warning: a test slice may legitimately hold only real or only fake samples.

Two conventions are named options (docs/metrics.md sections 1 and 5):

* the decision rule ``threshold_rule``: ``">"`` (a sample is fake when score > threshold,
  the default) or ``">="`` (score >= threshold, FairFD's code);
* the equal error rate ``eer``: ``"interpolated"`` (where FNR = FPR on the piecewise-linear
  ROC curve, the default) or ``"nearest"`` (the FPR of the ROC point, after scikit-learn's
  ``drop_intermediate``, nearest to FNR = FPR: DeepfakeBench and FairFD's code).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

ArrayLike = np.ndarray | pd.Series | Sequence[float]
THRESHOLD_RULES = (">", ">=")
EER_METHODS = ("interpolated", "nearest")


def check_threshold_rule(threshold_rule: str) -> str:
    if threshold_rule not in THRESHOLD_RULES:
        raise ValueError(f"threshold_rule must be one of {THRESHOLD_RULES}, got {threshold_rule!r}")
    return threshold_rule


def predict_fake(score, threshold, threshold_rule: str = ">") -> np.ndarray:
    """True where a sample is predicted fake: score > threshold, or >= with ``">="``."""
    s = np.asarray(score, dtype=np.float64)
    t = np.asarray(threshold, dtype=np.float64)
    return s >= t if check_threshold_rule(threshold_rule) == ">=" else s > t


def _as_label_score(label: ArrayLike, score: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(label)
    s = np.asarray(score, dtype=np.float64)
    if y.shape != s.shape or y.ndim != 1:
        raise ValueError(
            f"label and score must be 1-d of equal length, got {y.shape} and {s.shape}"
        )
    if np.isnan(s).any():
        raise ValueError("scores contain NaN; drop or fix failed predictions before scoring")
    y = y.astype(np.int64, copy=False)
    if y.size and (y.min() < 0 or y.max() > 1):
        raise ValueError("labels must be 0 (real) or 1 (fake)")
    return y, s


def roc_points(label: ArrayLike, score: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve ``(fpr, tpr, thresholds)`` at every distinct score, starting at (0, 0).

    Thresholds decrease; a sample is predicted fake at threshold t when score >= t (the ROC
    convention). Empty arrays come back when a class is missing.
    """
    y, s = _as_label_score(label, score)
    return _roc_from_counts(*_cumulative_counts(y, s))


def _cumulative_counts(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True / false positives above each distinct score, scanning scores high to low."""
    if y.size == 0:
        return np.empty(0), np.empty(0), np.empty(0)
    # Within a run of tied scores the order is irrelevant: only the run's end is kept.
    order = np.argsort(-s)
    s_sorted = s[order]
    y_sorted = y[order]
    last_of_run = np.r_[np.flatnonzero(np.diff(s_sorted)), y.size - 1]
    tps = np.cumsum(y_sorted, dtype=np.float64)[last_of_run]
    fps = (last_of_run + 1) - tps
    return tps, fps, s_sorted[last_of_run]


def _has_both_classes(tps: np.ndarray, fps: np.ndarray) -> bool:
    return tps.size > 0 and tps[-1] > 0 and fps[-1] > 0


def _roc_from_counts(tps, fps, thresholds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not _has_both_classes(tps, fps):
        return np.empty(0), np.empty(0), np.empty(0)
    return np.r_[0.0, fps / fps[-1]], np.r_[0.0, tps / tps[-1]], np.r_[np.inf, thresholds]


def _auc_from_roc(fpr: np.ndarray, tpr: np.ndarray) -> float:
    return float(np.trapezoid(tpr, fpr)) if fpr.size else float("nan")


def _ap_from_counts(tps: np.ndarray, fps: np.ndarray) -> float:
    if not _has_both_classes(tps, fps):
        return float("nan")
    precision = tps / (tps + fps)
    recall_step = np.diff(np.r_[0.0, tps / tps[-1]])
    return float(np.sum(recall_step * precision))


def _eer_from_counts(tps: np.ndarray, fps: np.ndarray, method: str = "interpolated") -> float:
    """Along the curve FNR - FPR falls from 1 to -1; the crossing lies on the first segment
    where it reaches zero, and both rates are linear along a segment, so they meet there.
    ``nearest``: the FPR of the point with the smallest |FNR - FPR| (the first on ties) among
    the points scikit-learn's ``roc_curve`` keeps (``drop_intermediate``: a point whose
    true- and false-positive counts both change by the same step as before it is dropped;
    the first and last points and the (0, 0) origin are kept)."""
    if method not in EER_METHODS:
        raise ValueError(f"eer must be one of {EER_METHODS}, got {method!r}")
    fpr, tpr, _ = _roc_from_counts(tps, fps, tps)
    if fpr.size == 0:
        return float("nan")
    gap = (1.0 - tpr) - fpr
    if method == "nearest":
        keep = np.r_[True, True, (np.diff(fps, 2) != 0) | (np.diff(tps, 2) != 0), True]
        if tps.size == 1:
            keep = keep[:2]
        i = int(np.argmin(np.abs(gap[keep])))
        return float(fpr[keep][i])
    i = int(np.flatnonzero(gap <= 0)[0])  # exists (the last point has gap -1) and is >= 1
    if gap[i] == 0:
        return float(fpr[i])
    t = gap[i - 1] / (gap[i - 1] - gap[i])
    return float(fpr[i - 1] + t * (fpr[i] - fpr[i - 1]))


def auc(label: ArrayLike, score: ArrayLike) -> float:
    """Area under the ROC curve (NaN with a single class)."""
    fpr, tpr, _ = roc_points(label, score)
    return _auc_from_roc(fpr, tpr)


def ap(label: ArrayLike, score: ArrayLike) -> float:
    """Average precision, sum_k (R_k - R_{k-1}) P_k over distinct thresholds (NaN with one class)."""
    y, s = _as_label_score(label, score)
    tps, fps, _ = _cumulative_counts(y, s)
    return _ap_from_counts(tps, fps)


def eer(label: ArrayLike, score: ArrayLike, method: str = "interpolated") -> float:
    """Equal error rate: where FNR = FPR on the ROC curve, linearly interpolated between
    points (``interpolated``) or at the nearest ROC point (``nearest``)."""
    y, s = _as_label_score(label, score)
    return _eer_from_counts(*_cumulative_counts(y, s)[:2], method)


def acc(
    label: ArrayLike,
    score: ArrayLike,
    threshold: float | ArrayLike = 0.5,
    threshold_rule: str = ">",
) -> float:
    """Accuracy when a sample is predicted fake iff score > threshold (or >=, see
    ``threshold_rule``); the threshold is a scalar or one per sample."""
    y, s = _as_label_score(label, score)
    if y.size == 0:
        return float("nan")
    return float(np.mean(predict_fake(s, threshold, threshold_rule) == (y == 1)))


def detection_metrics(
    label: ArrayLike,
    score: ArrayLike,
    threshold: float | ArrayLike = 0.5,
    threshold_rule: str = ">",
    eer: str = "interpolated",
) -> dict[str, float]:
    """AUC, ACC (at ``threshold`` under ``threshold_rule``), AP, EER (``eer`` method) and
    the sample counts."""
    y, s = _as_label_score(label, score)
    n_fake = int(y.sum())
    tps, fps, thresholds = _cumulative_counts(y, s)  # one sort for all ranking metrics
    fpr, tpr, _ = _roc_from_counts(tps, fps, thresholds)
    return {
        "AUC": _auc_from_roc(fpr, tpr),
        "ACC": acc(y, s, threshold, threshold_rule),
        "AP": _ap_from_counts(tps, fps),
        "EER": _eer_from_counts(tps, fps, eer),
        "n": float(y.size),
        "n_real": float(y.size - n_fake),
        "n_fake": float(n_fake),
    }


def video_scores(
    frame_df: pd.DataFrame,
    video_col: str = "video_id",
    label_col: str = "label",
    score_col: str = "score",
) -> pd.DataFrame:
    """One row per video: its label, the mean of its frame scores and its frame count."""
    for col in (video_col, label_col, score_col):
        if col not in frame_df.columns:
            raise ValueError(f"frame table lacks column {col!r}")
    grouped = frame_df.groupby(video_col, sort=True, observed=True)
    videos = grouped.agg(
        label=(label_col, "max"),
        label_min=(label_col, "min"),
        score=(score_col, "mean"),
        n_frames=(score_col, "size"),
    )
    mixed = videos.index[videos["label"] != videos["label_min"]]
    if len(mixed):
        raise ValueError(f"videos with frames of both labels: {list(mixed[:5])}")
    return videos.drop(columns="label_min").reset_index()


def video_level(
    frame_df: pd.DataFrame,
    video_col: str = "video_id",
    label_col: str = "label",
    score_col: str = "score",
    threshold: float = 0.5,
    threshold_rule: str = ">",
    eer: str = "interpolated",
) -> dict[str, float]:
    """Detection metrics on videos, each scored by the mean of its frame scores."""
    videos = video_scores(frame_df, video_col, label_col, score_col)
    return detection_metrics(
        videos["label"].to_numpy(), videos["score"].to_numpy(), threshold, threshold_rule, eer
    )
