"""Robustness: AUC per operation and level, the drop from ``clean``, the mean over all
variants (the overall robustness score) and per operation category."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from fairforge.perturb import CLEAN
from fairforge.tables.variants import RANDOM_CATEGORY, order_rows, with_variant_info


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
        # The overall score stays the mean over operation-level variants: the Benchmark
        # protocol's op@random rows have their own category mean.
        ops = ops.loc[ops["category"] != RANDOM_CATEGORY]
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


def random_intensity_table(
    robustness: pd.DataFrame, detectors: Mapping[str, Mapping], metric: str = "AUC"
) -> pd.DataFrame:
    """The Benchmark paper's protocol: ``metric`` per perturbation type, each sample at a
    random intensity (the ``op@random`` variants of :func:`robustness_table`), beside
    ``clean``; then, per architecture, the mean over the detectors trained on different
    datasets (``train_dataset = "(mean)"``, ``n_train_datasets``) when there are several.

    ``detectors`` maps a detector to its ``arch`` and ``train_dataset``.
    """
    rows = robustness.loc[
        (robustness["scope"] == "variant") & (robustness["category"] == RANDOM_CATEGORY)
    ]
    clean = robustness.loc[
        (robustness["scope"] == "variant") & (robustness["variant"] == CLEAN),
        ["dataset", "detector", metric],
    ].rename(columns={metric: f"clean_{metric}"})
    table = rows[["dataset", "detector", "operation", metric]].merge(
        clean, on=["dataset", "detector"], how="left"
    )
    table["arch"] = table["detector"].map(lambda d: detectors.get(d, {}).get("arch", d))
    table["train_dataset"] = table["detector"].map(
        lambda d: str(detectors.get(d, {}).get("train_dataset", ""))
    )
    table["n_train_datasets"] = 1
    keys = ["dataset", "arch", "operation"]
    spread = table.groupby(keys)["train_dataset"].transform("nunique")
    several = table.loc[spread > 1]
    if len(several):
        mean = several.groupby(keys, sort=True).agg(
            **{
                metric: (metric, "mean"),
                f"clean_{metric}": (f"clean_{metric}", "mean"),
                "n_train_datasets": ("train_dataset", "nunique"),
            }
        )
        mean = mean.reset_index().assign(detector=lambda f: f["arch"], train_dataset="(mean)")
        table = pd.concat([table, mean], ignore_index=True)
    columns = ["dataset", "arch", "detector", "train_dataset", "n_train_datasets", "operation"]
    columns += [metric, f"clean_{metric}"]
    return table[columns].sort_values(columns[:4], kind="stable").reset_index(drop=True)
