"""Which detectors the fairness tables can judge (docs/metrics.md section 11).

A detector that learned nothing is "fair" in the emptiest sense: calling every face fake
gives every group the same accuracy, so every gap is 0. Such a detector keeps its numbers,
but every gap of it gets a ``reason`` and the verdict leaves it out of the ranking when

* it was trained here and its best validation AUC (``training_log.csv``) is under
  ``metrics.min_val_auc``, or it has none (a validation split without real or without fake
  samples);
* it was not trained here (imported weights, a score file) and its AUC on the evaluated
  split is under the same bar: with no validation AUC to go by, the evaluated set is the
  only evidence that it detects anything;
* its predictions are (almost) constant: at least ``metrics.max_constant_share`` of the
  real samples and of the fake samples fall on the same side of the threshold. Both classes
  are counted apart, so that a dataset of mostly fakes does not make a good detector look
  constant.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.metrics.conventions import DEFAULT_CONVENTIONS, Conventions
from fairforge.metrics.detection import auc, predict_fake
from fairforge.metrics.fairness import NOT_GAPS
from fairforge.tables.detectors import TRAINED_ENOUGH_AUC

#: Defaults of the config's ``metrics.max_constant_share`` and ``metrics.min_forgery_success``
#: (``metrics.min_val_auc`` defaults to :data:`~fairforge.tables.detectors.TRAINED_ENOUGH_AUC`).
MAX_CONSTANT_SHARE = 0.99
MIN_FORGERY_SUCCESS = 0.9
#: Rows of the fairness table that are utility or counts, not gaps: a reason about whether a
#: detector can be judged on its gaps is not attached to them.
NOT_JUDGED_ROWS = ("AUC", "AP", "EER", *NOT_GAPS, "n_samples")
#: The first line of the training log of imported weights (``scripts/train.py``).
IMPORTED = "imported"

STANDING_COLUMNS = [
    "dataset",
    "detector",
    "judged",
    "val_auc",
    "auc",
    "called_fake_real",
    "called_fake_fake",
    "reason",
]


@dataclass(frozen=True)
class TrainingRecord:
    """What the training log says: the best validation AUC (NaN: none was measured) and
    whether the workflow trained the detector (False: it imported the weights)."""

    val_auc: float
    trained: bool


def read_training_log(path: str | Path) -> TrainingRecord:
    """The :class:`TrainingRecord` of a ``training_log.csv``: one row per epoch with a
    ``val_auc`` column, or the single line ``imported,<weights>`` of imported weights."""
    path = Path(path)
    with path.open(encoding="utf-8") as fh:
        first = fh.readline()
    if first.startswith(f"{IMPORTED},"):
        return TrainingRecord(float("nan"), trained=False)
    log = pd.read_csv(path)
    if "val_auc" not in log.columns:
        raise ValueError(f"{path}: a training log needs a val_auc column")
    values = log["val_auc"].to_numpy(np.float64)
    best = float(np.nanmax(values)) if np.isfinite(values).any() else float("nan")
    return TrainingRecord(best, trained=True)


def training_records(paths: Iterable[str | Path]) -> dict[str, TrainingRecord]:
    """``{detector: record}`` of ``results/models/{detector}/training_log.csv`` files."""
    return {Path(p).parent.name: read_training_log(p) for p in paths}


def _share(value: float) -> str:
    return f"{100 * value:.0f}%"


def detector_standing(
    preds: pd.DataFrame,
    record: TrainingRecord | None,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    *,
    min_val_auc: float = TRAINED_ENOUGH_AUC,
    max_constant_share: float = MAX_CONSTANT_SHARE,
) -> dict:
    """Whether one detector's predictions on one dataset can be judged (module docstring):
    a row of :data:`STANDING_COLUMNS` without ``dataset`` and ``detector``. ``record`` is
    None for a detector the workflow neither trained nor imported (a score file)."""
    label = preds["label"].to_numpy(np.int64)
    score = preds["score"].to_numpy(np.float64)
    fake = predict_fake(score, conventions.threshold, conventions.threshold_rule)
    called = {c: float(fake[label == c].mean()) if (label == c).any() else np.nan for c in (0, 1)}
    evaluated_auc = auc(label, score)
    reasons = []
    if record is not None and record.trained:
        if not np.isfinite(record.val_auc):
            reasons.append(
                "not trained enough to judge: no validation AUC, its validation split had "
                "no real or no fake sample"
            )
        elif record.val_auc < min_val_auc:
            reasons.append(
                f"not trained enough to judge: validation AUC {record.val_auc:.3g}, "
                f"under metrics.min_val_auc {min_val_auc:g}"
            )
    elif np.isfinite(evaluated_auc) and evaluated_auc < min_val_auc:
        origin = "imported weights" if record is not None else "scores from a file"
        reasons.append(
            f"not trained enough to judge: AUC {evaluated_auc:.3g} on the evaluated split, "
            f"under metrics.min_val_auc {min_val_auc:g} ({origin}: no validation AUC)"
        )
    real, fakes = called[0], called[1]
    if np.isfinite(real) and np.isfinite(fakes):
        if min(real, fakes) >= max_constant_share:
            side, real_side, fake_side = "fake", real, fakes
        elif max(real, fakes) <= 1 - max_constant_share:
            side, real_side, fake_side = "real", 1 - real, 1 - fakes
        else:
            side = None
        if side is not None:
            reasons.append(
                f"constant predictions: {_share(real_side)} of real and {_share(fake_side)} "
                f"of fake samples called {side}"
            )
    return {
        "judged": not reasons,
        "val_auc": record.val_auc if record is not None else np.nan,
        "auc": evaluated_auc,
        "called_fake_real": real,
        "called_fake_fake": fakes,
        "reason": "; ".join(reasons),
    }


def standing_table(
    preds: pd.DataFrame,
    records: Mapping[str, TrainingRecord] | None = None,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    *,
    min_val_auc: float = TRAINED_ENOUGH_AUC,
    max_constant_share: float = MAX_CONSTANT_SHARE,
) -> pd.DataFrame:
    """:func:`detector_standing` of every dataset × detector of ``preds`` (one evaluated
    split); ``records``: :func:`training_records` (a detector without one is judged on the
    evaluated split)."""
    records = records or {}
    if "dataset" not in preds.columns:
        preds = preds.assign(dataset="data")
    rows = [
        {
            "dataset": dataset,
            "detector": detector,
            **detector_standing(
                part,
                records.get(detector),
                conventions,
                min_val_auc=min_val_auc,
                max_constant_share=max_constant_share,
            ),
        }
        for (dataset, detector), part in preds.groupby(["dataset", "detector"], sort=True)
    ]
    return pd.DataFrame(rows, columns=STANDING_COLUMNS)


def left_out(standing: pd.DataFrame | None, dataset) -> dict[str, str]:
    """``{detector: reason}`` of the detectors of ``dataset`` the verdict does not rank."""
    if standing is None or standing.empty:
        return {}
    rows = standing.loc[
        (standing["dataset"].astype(str) == str(dataset))
        & ~standing["judged"].astype(str).str.lower().eq("true")
    ]
    return dict(zip(rows["detector"].astype(str), rows["reason"].fillna("").astype(str)))
