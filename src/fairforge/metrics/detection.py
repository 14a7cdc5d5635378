"""Detection metrics of the Benchmark paper: AUC, ACC, AP and EER, at frame and video level.

AUC and AP follow scikit-learn's definitions exactly (trapezoidal ROC area; AP as the
step-wise sum of precision times recall increments) and agree with ``roc_auc_score`` and
``average_precision_score``. Ranking metrics of inputs with a single class are NaN, without
a warning: a test slice may legitimately hold only real or only fake samples.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

ArrayLike = np.ndarray | pd.Series | Sequence[float]


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


def _eer_from_roc(fpr: np.ndarray, tpr: np.ndarray) -> float:
    """Along the curve FNR - FPR falls from 1 to -1; the crossing lies on the first segment
    where it reaches zero, and both rates are linear along a segment, so they meet there."""
    if fpr.size == 0:
        return float("nan")
    gap = (1.0 - tpr) - fpr
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


def eer(label: ArrayLike, score: ArrayLike) -> float:
    """Equal error rate: where FNR = FPR on the ROC curve, linearly interpolated between points."""
    fpr, tpr, _ = roc_points(label, score)
    return _eer_from_roc(fpr, tpr)


def acc(label: ArrayLike, score: ArrayLike, threshold: float | ArrayLike = 0.5) -> float:
    """Accuracy when a sample is predicted fake iff score > threshold (scalar or per sample)."""
    y, s = _as_label_score(label, score)
    if y.size == 0:
        return float("nan")
    return float(np.mean((s > np.asarray(threshold, dtype=np.float64)) == (y == 1)))


def detection_metrics(
    label: ArrayLike, score: ArrayLike, threshold: float | ArrayLike = 0.5
) -> dict[str, float]:
    """AUC, ACC (at ``threshold``), AP, EER and the sample counts."""
    y, s = _as_label_score(label, score)
    n_fake = int(y.sum())
    tps, fps, thresholds = _cumulative_counts(y, s)  # one sort for all ranking metrics
    fpr, tpr, _ = _roc_from_counts(tps, fps, thresholds)
    return {
        "AUC": _auc_from_roc(fpr, tpr),
        "ACC": acc(y, s, threshold),
        "AP": _ap_from_counts(tps, fps),
        "EER": _eer_from_roc(fpr, tpr),
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
) -> dict[str, float]:
    """Detection metrics on videos, each scored by the mean of its frame scores."""
    videos = video_scores(frame_df, video_col, label_col, score_col)
    return detection_metrics(videos["label"].to_numpy(), videos["score"].to_numpy(), threshold)
