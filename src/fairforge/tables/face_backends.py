"""Which face detector fails whom: ``results/{dataset}/face_detection_by_backend.csv``.

Per backend (``faces.compare_backends``, the first is the primary) and group, over the
readable source images (:func:`fairforge.faces.compare.compare_backends`):

- ``detection_rate``: the share of images where a face was found;
- ``landmark_failure_rate``: among those, the share whose landmarks are unusable
  (:func:`fairforge.faces.compare.landmark_problem`);
- ``alignment_error``: the mean distance between the backend's five alignment points and
  the primary's, over the primary's inter-ocular distance, on the images where both have
  usable landmarks (empty for the primary itself).

Each comes with a 95% subject-level bootstrap interval (``*_low``, ``*_high``): subjects are
resampled with replacement within each group, all of a subject's images together, by the
resampling of :mod:`fairforge.metrics.resampling`, and the interval is its basic bootstrap
interval. The last rows, group ``(all)``, pool the groups under the same resamples. A
preprocessing step that fails more often on one group is itself a source of unfairness.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from fairforge.faces.compare import alignment_errors
from fairforge.metrics.intervals import basic_interval
from fairforge.metrics.resampling import (
    SubjectStats,
    counts_from_indices,
    subject_resample_indices,
)

ALL = "(all)"
# (name, numerator, denominator) per backend: rates are sums over the subject's images.
QUANTITIES = (
    ("detection_rate", "detected", "readable"),
    ("landmark_failure_rate", "landmark_failed", "detected"),
    ("alignment_error", "error_sum", "compared"),
)
FACE_BACKEND_COLUMNS = (
    "backend",
    "group",
    "n_images",
    "n_subjects",
    "n_unreadable",
    "n_detected",
    "detection_rate",
    "detection_rate_low",
    "detection_rate_high",
    "n_landmark_failures",
    "landmark_failure_rate",
    "landmark_failure_rate_low",
    "landmark_failure_rate_high",
    "n_compared",
    "alignment_error",
    "alignment_error_low",
    "alignment_error_high",
)


def _per_image(outcomes: pd.DataFrame, sources: pd.DataFrame, primary: str) -> pd.DataFrame:
    frame = outcomes.assign(error=alignment_errors(outcomes, primary)).merge(
        sources[["image_id", "subject_id", "group"]].astype({"group": str}),
        on="image_id",
        how="left",
        validate="many_to_one",
    )
    if frame["subject_id"].isna().any():
        missing = frame.loc[frame["subject_id"].isna(), "image_id"].iloc[0]
        raise ValueError(f"backend outcome for an image not in the sources: {missing!r}")
    readable = frame["readable"].astype(bool)
    detected = frame["detected"].astype(bool) & readable
    compared = frame["error"].notna()
    return frame.assign(
        readable=readable.astype(np.float64),
        detected=detected.astype(np.float64),
        landmark_failed=(detected & ~frame["landmarks_ok"].astype(bool)).astype(np.float64),
        compared=compared.astype(np.float64),
        error_sum=frame["error"].fillna(0.0),
    )


def _subject_stats(frame: pd.DataFrame, backends: Sequence[str]) -> SubjectStats:
    """Per subject, per (backend, quantity): numerator as ``correct``, denominator as
    ``total`` (SubjectStats' cells, so the bootstrap of resampling.py resamples them)."""
    groups = tuple(sorted(frame["group"].unique()))
    subjects = frame.groupby("subject_id", sort=True)["group"].agg(["first", "nunique"])
    if (subjects["nunique"] > 1).any():
        raise ValueError(
            f"subjects in more than one group: {list(subjects.index[subjects['nunique'] > 1])}"
        )
    approaches = tuple(f"{b}:{name}" for b in backends for name, _, _ in QUANTITIES)
    num = np.zeros((len(subjects), len(approaches)))
    den = np.zeros_like(num)
    position = {s: i for i, s in enumerate(subjects.index)}
    for j, backend in enumerate(backends):
        part = frame[frame["backend"] == backend]
        sums = part.groupby("subject_id", sort=True)[
            ["readable", "detected", "landmark_failed", "compared", "error_sum"]
        ].sum()
        rows = [position[s] for s in sums.index]
        for k, (_, top, bottom) in enumerate(QUANTITIES):
            num[rows, j * len(QUANTITIES) + k] = sums[top].to_numpy()
            den[rows, j * len(QUANTITIES) + k] = sums[bottom].to_numpy()
    return SubjectStats(
        np.asarray(subjects.index, dtype=object),
        np.searchsorted(groups, subjects["first"].to_numpy()),
        groups,
        approaches,
        0,
        num,
        den,
    )


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def face_detection_by_backend(
    outcomes: pd.DataFrame,
    sources: pd.DataFrame,
    backends: Sequence[str],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """The table (:data:`FACE_BACKEND_COLUMNS`) from the per-image outcomes of
    :func:`fairforge.faces.compare.compare_backends` and the sources manifest
    (``subject_id``, ``group``); ``backends[0]`` is the primary."""
    backends = list(backends)
    if not backends:
        raise ValueError("no backends to compare (faces.compare_backends is empty)")
    frame = _per_image(outcomes, sources, backends[0])
    stats = _subject_stats(frame, backends)
    num, den = stats.cell_counts()  # (F, S)
    weights = counts_from_indices(subject_resample_indices(stats, n_boot, seed), stats.n_subjects)
    rep_num, rep_den = stats.cell_counts(weights)  # (B, F, S)
    # The pooled group: the sums over groups, of the data and of every resample.
    num = np.concatenate([num, num.sum(-1, keepdims=True)], axis=-1)
    den = np.concatenate([den, den.sum(-1, keepdims=True)], axis=-1)
    rep_num = np.concatenate([rep_num, rep_num.sum(-1, keepdims=True)], axis=-1)
    rep_den = np.concatenate([rep_den, rep_den.sum(-1, keepdims=True)], axis=-1)
    estimate, replicates = _ratio(num, den), _ratio(rep_num, rep_den)
    groups = [*stats.groups, ALL]
    n_subjects = [int((stats.subject_group == g).sum()) for g in range(len(stats.groups))]
    n_subjects.append(stats.n_subjects)
    rows = []
    for b, backend in enumerate(backends):
        part = frame[frame["backend"] == backend]
        for g, group in enumerate(groups):
            cell = part if group == ALL else part[part["group"] == group]
            row = {
                "backend": backend,
                "group": group,
                "n_images": len(cell),
                "n_subjects": n_subjects[g],
                "n_unreadable": int((cell["readable"] == 0).sum()),
                "n_detected": int(cell["detected"].sum()),
                "n_landmark_failures": int(cell["landmark_failed"].sum()),
                "n_compared": int(cell["compared"].sum()),
            }
            for k, (name, _, _) in enumerate(QUANTITIES):
                f = b * len(QUANTITIES) + k
                value = float(estimate[f, g])
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    low, high = basic_interval(value, replicates[:, f, g], level, floor=0.0)
                if name != "alignment_error":
                    low, high = min(low, 1.0), min(high, 1.0)
                row |= {name: value, f"{name}_low": low, f"{name}_high": high}
            rows.append(row)
    return pd.DataFrame(rows, columns=list(FACE_BACKEND_COLUMNS))
