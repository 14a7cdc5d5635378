"""Robustness: AUC per operation and level, the drop from ``clean``, the mean over all
variants (the overall robustness score) and per operation category."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairforge.perturb import CLEAN
from fairforge.tables.variants import order_rows, with_variant_info


def robustness_table(detection: pd.DataFrame, metric: str = "AUC") -> pd.DataFrame:
    """Robustness of each detector from the frame-level :func:`detection_table`.

    ``scope`` says what a row is: ``variant`` (one operation at one level, and ``clean``),
    ``category`` (mean over the variants of one operation category) or ``overall`` (mean
    over every operation-level variant: the overall robustness score). ``drop`` is the clean
    value minus the row's value (positive: worse than clean).
    """
    frame = detection.loc[detection["unit"] == "frame"] if "unit" in detection else detection
    frame = with_variant_info(frame[["dataset", "detector", "variant", metric]].copy())
    rows = []
    for (dataset, detector), part in frame.groupby(["dataset", "detector"], sort=True):
        clean = part.loc[part["variant"] == CLEAN, metric]
        clean_value = float(clean.iloc[0]) if len(clean) else np.nan
        part = order_rows(part.assign(scope="variant"))
        part["drop"] = clean_value - part[metric]
        rows.append(part)
        ops = part.loc[part["variant"] != CLEAN]
        base = {
            "dataset": dataset,
            "detector": detector,
            "variant": "",
            "operation": "",
            "level": np.nan,
            "severity": np.nan,
        }
        for category, cat in ops.groupby("category", sort=True):
            rows.append(
                pd.DataFrame(
                    [
                        {
                            **base,
                            "scope": "category",
                            "category": category,
                            metric: cat[metric].mean(),
                            "n_variants": len(cat),
                            "drop": clean_value - cat[metric].mean(),
                        }
                    ]
                )
            )
        rows.append(
            pd.DataFrame(
                [
                    {
                        **base,
                        "scope": "overall",
                        "category": "all",
                        metric: ops[metric].mean() if len(ops) else np.nan,
                        "n_variants": len(ops),
                        "drop": clean_value - ops[metric].mean() if len(ops) else np.nan,
                    }
                ]
            )
        )
    table = pd.concat(rows, ignore_index=True)
    table["n_variants"] = table["n_variants"].fillna(1).astype(np.int64)
    columns = [
        "dataset",
        "detector",
        "scope",
        "category",
        "operation",
        "level",
        "severity",
        "variant",
        metric,
        "drop",
        "n_variants",
    ]
    return table[columns]
