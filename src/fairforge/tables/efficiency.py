"""Each detector's cost next to its clean AUC per dataset."""

from __future__ import annotations

import pandas as pd

from fairforge.perturb import CLEAN

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
