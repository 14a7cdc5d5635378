"""Each detector's cost next to its clean AUC per dataset, and per family of detectors
(one architecture on several training sets) next to its average AUC."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from fairforge.perturb import CLEAN
from fairforge.tables.detectors import training_families

# Cost columns of efficiency.csv the figure plots AUC against, with their axis labels.
EFFICIENCY_AXES = {
    "gflops": "GFLOPs per image",
    "params": "parameters",
    "latency_ms_bs1": "latency per image at batch 1 (ms)",
}


def clean_metric(
    detection: pd.DataFrame, metric: str = "AUC", variant: str = CLEAN
) -> pd.DataFrame:
    """``metric`` of every detector on every dataset under ``variant`` (frame level):
    columns detector, dataset, ``metric``; sorted by detector then dataset."""
    frame = detection.loc[detection["variant"] == variant]
    if "unit" in frame.columns:
        frame = frame.loc[frame["unit"] == "frame"]
    return (
        frame[["detector", "dataset", metric]]
        .sort_values(["detector", "dataset"])
        .reset_index(drop=True)
    )


def efficiency_with_metric(
    efficiency: pd.DataFrame, detection: pd.DataFrame, metric: str = "AUC", variant: str = CLEAN
) -> pd.DataFrame:
    """One row per detector x dataset: the detector's cost (``efficiency.csv``) next to its
    ``metric`` on that dataset under ``variant``. Detectors without a timed network
    (classical ones: a ``note`` instead of costs) keep NaN costs."""
    quality = clean_metric(detection, metric, variant)
    merged = efficiency.merge(quality, on="detector", how="inner")
    first = ["detector", "dataset", metric]
    return (
        merged[first + [c for c in merged.columns if c not in first]]
        .sort_values(["detector", "dataset"])
        .reset_index(drop=True)
    )


#: The ``dataset`` of :func:`family_efficiency`'s rows: every training set and test dataset.
AVERAGED = "average"


def family_efficiency(
    efficiency: pd.DataFrame,
    detection: pd.DataFrame,
    settings: Mapping[str, Mapping],
    metric: str = "AUC",
    variant: str = CLEAN,
) -> pd.DataFrame:
    """The Benchmark paper's Figs. 4-6: per family of detectors that differ only in what they
    trained on (``train_dataset``, ``train_methods``: one architecture on every training
    set), ``metric`` on ``variant`` averaged over its detectors and every test dataset
    (``dataset`` :data:`AVERAGED`, ``n_scores`` averaged), next to the cost of its first
    timed member (the members share the network). Columns as :func:`efficiency_with_metric`,
    one row per family, named after its first member by name."""
    merged = efficiency_with_metric(efficiency, detection, metric, variant)
    rows = []
    for members in map(sorted, training_families(settings, ("train_dataset", "train_methods"))):
        part = merged.loc[merged["detector"].isin(members)]
        if part.empty:
            continue
        timed = part.dropna(subset=[c for c in EFFICIENCY_AXES if c in part.columns], how="all")
        row = (timed if len(timed) else part).iloc[0].to_dict()
        row.update(
            detector=members[0],
            dataset=AVERAGED,
            **{metric: float(part[metric].mean()), "n_scores": int(part[metric].notna().sum())},
        )
        rows.append(row)
    return pd.DataFrame(rows, columns=[*merged.columns, "n_scores"])
