"""Detection per forgery method and the cross-manipulation table.

- :func:`per_method_table`: AUC, ACC, AP, EER of the real images against one method's fakes,
  per dataset x detector x variant x method (every method a test split holds, generated or
  imported); the Assessment and Benchmark papers' per-manipulation columns.
- :func:`cross_manipulation_table`: train on method(s) A, test on method B: one row per
  dataset x detector with the methods it trained on, one column per test method (clean AUC),
  and the mean over the test methods. Detectors trained on different methods give the
  train-on x test-on matrix; a run whose detectors share their training methods gives one
  row per detector.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from fairforge.columns import CLEAN, REAL
from fairforge.metrics.conventions import DEFAULT_CONVENTIONS, Conventions
from fairforge.metrics.detection import detection_metrics
from fairforge.tables.predictions import evaluation_rows, groups_of
from fairforge.tables.variants import order_rows

AVERAGE = "average"


def per_method_table(
    preds: pd.DataFrame,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    split: str | None = "test",
) -> pd.DataFrame:
    """One row per dataset x detector x variant x fake method: the metrics of the real images
    against that method's fakes (``n_real``, ``n_fake`` count them), under ``conventions``."""
    c = conventions
    rows = []
    for (dataset, detector, variant), part in groups_of(evaluation_rows(preds, split)):
        real = part.loc[part["method"] == REAL]
        for method, fakes in part.loc[part["method"] != REAL].groupby("method", sort=True):
            both = pd.concat([real, fakes])
            rows.append(
                {
                    "dataset": dataset,
                    "detector": detector,
                    "variant": variant,
                    "method": method,
                    **detection_metrics(
                        both["label"].to_numpy(),
                        both["score"].to_numpy(),
                        c.threshold,
                        c.threshold_rule,
                        c.eer,
                    ),
                }
            )
    columns = ["dataset", "detector", "variant", "method", "AUC", "ACC", "AP", "EER"]
    if not rows:
        return pd.DataFrame(columns=[*columns, "n", "n_real", "n_fake"])
    table = order_rows(pd.DataFrame(rows), ("dataset", "detector", "method"))
    for col in ("n", "n_real", "n_fake"):
        table[col] = table[col].astype(np.int64)
    return table


def trained_on(settings: Mapping) -> str:
    """The training methods of a detector's settings, as a table label ('a+b')."""
    return "+".join(sorted(settings.get("train_methods") or [])) or "(none)"


def cross_manipulation_table(
    per_method: pd.DataFrame,
    settings: Mapping[str, Mapping],
    metric: str = "AUC",
    variant: str = CLEAN,
) -> pd.DataFrame:
    """Rows: dataset, detector, ``trained_on`` (its training methods); columns: each test
    method's ``metric`` on ``variant``, then ``average`` (their mean). Detectors without
    settings (external scores) show ``(external)``."""
    frame = per_method.loc[per_method["variant"] == variant]
    if frame.empty:
        return pd.DataFrame(columns=["dataset", "detector", "trained_on", AVERAGE])
    wide = frame.pivot_table(
        index=["dataset", "detector"], columns="method", values=metric, aggfunc="first"
    )
    methods = sorted(wide.columns)
    wide = wide.reindex(columns=methods)
    wide[AVERAGE] = wide[methods].mean(axis=1)
    wide = wide.reset_index()
    wide.columns.name = None
    wide.insert(
        2,
        "trained_on",
        [trained_on(settings[d]) if d in settings else "(external)" for d in wide["detector"]],
    )
    return wide.sort_values(["dataset", "trained_on", "detector"], kind="stable").reset_index(
        drop=True
    )
