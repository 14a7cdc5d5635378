"""The tables the workflow writes, built from predictions (shared by the rules and the CLI).

Predictions of several datasets are never pooled: every table is computed per dataset and
gets a ``dataset`` column (samples of different datasets can share ids).
"""
from __future__ import annotations

import logging

import pandas as pd

from fairforge.metrics.fairness import fairness_table, per_group_long
from fairforge.metrics.uncertainty import bootstrap_table

log = logging.getLogger(__name__)


def _per_dataset(preds: pd.DataFrame):
    if "dataset" not in preds.columns:
        preds = preds.assign(dataset="data")
    yield from preds.groupby("dataset", sort=True)


def fairness_outputs(preds: pd.DataFrame, threshold: float = 0.5,
                     ur_denominator: str = "one_plus_acc", bootstrap: int = 0,
                     seed: int = 0) -> dict[str, pd.DataFrame]:
    """``table`` (rows: dataset × metric, columns: detectors), ``per_group`` and, when
    ``bootstrap`` > 0, ``ci`` (subject-level bootstrap intervals of every metric)."""
    tables, per_group, cis = [], [], []
    for dataset, part in _per_dataset(preds):
        if part["label"].nunique() < 2:
            # e.g. a split where no forgery succeeded: nothing to measure, say so
            log.warning("dataset %s: predictions hold only label %s; no fairness metrics",
                        dataset, sorted(part["label"].unique()))
            continue
        table = fairness_table(part, threshold=threshold, ur_denominator=ur_denominator)
        tables.append(table.reset_index().assign(dataset=dataset))
        per_group.append(per_group_long(part, threshold=threshold).assign(dataset=dataset))
        if bootstrap:
            cis.append(bootstrap_table(part, n_boot=bootstrap, seed=seed, threshold=threshold,
                                       ur_denominator=ur_denominator).assign(dataset=dataset))
    if not tables:
        raise ValueError("no dataset has both real and fake predictions to measure")
    table = pd.concat(tables, ignore_index=True)
    first = ["dataset", "metric"]
    out = {"table": table[first + [c for c in table.columns if c not in first]],
           "per_group": _dataset_first(pd.concat(per_group, ignore_index=True))}
    out["ci"] = (_dataset_first(pd.concat(cis, ignore_index=True)) if cis else
                 pd.DataFrame(columns=["dataset", "detector", "metric", "estimate", "ci_low",
                                       "ci_high", "n_valid", "n_boot"]))
    return out


def _dataset_first(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[["dataset"] + [c for c in frame.columns if c != "dataset"]]
