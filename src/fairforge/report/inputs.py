"""What the report reads: the tables and figures a run wrote under ``results`` and the
captions shipped with the package.

The captions are package data (``fairforge/report/captions/*.rst``), read through
:mod:`importlib.resources` so that a non-editable install finds them too; they are the same
files ``snakemake --report`` shows (rules point at them with :func:`caption_path`).
"""
from __future__ import annotations

import atexit
from contextlib import ExitStack
from functools import cache
from importlib.resources import as_file, files
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

TABLES = {
    "detectors": "detectors.csv",
    "detection": "detection_table.csv",
    "fairness": "fairness_table.csv",
    "fairness_ci": "fairness_ci.csv",
    "fairness_per_group": "fairness_per_group.csv",
    "pvalues": "fairness_pvalues.csv",
    "robustness": "robustness_table.csv",
    "fairness_under_perturbation": "fairness_under_perturbation.csv",
    "thresholds": "thresholds_table.csv",
    "grayscale": "grayscale_table.csv",
    "balanced": "balanced_table.csv",
    "generalization": "generalization.csv",
    "failures": "failures_per_group.csv",
    "efficiency": "efficiency.csv",
}
FIGURES = {
    "robustness_figure": "figures/robustness.png",
    "fairness_heatmap": "figures/fairness_heatmap.png",
    "score_distributions": "figures/score_distributions.png",
    "failures_figure": "figures/failures_per_group.png",
    "efficiency_figure": "figures/efficiency.png",
}
# Outputs of the ranking study, read only when config ranking.enabled.
EXPOSURE = {
    "exposure_table": "exposure_table.csv",
    "exposure_per_probe_group": "exposure_per_probe_group.csv",
    "exposure_ks": "exposure_ks.csv",
    "exposure_figure": "figures/exposure.png",
}


def report_inputs(results: str | Path = "results", datasets: Sequence[str] = (),
                  methods: Sequence[str] = (), ranking: bool = True) -> dict:
    """Where :func:`build_report` reads each table and figure, under ``results``; the
    ranking study's outputs only with ``ranking``."""
    results = Path(results)
    paths: dict = {k: results / v for k, v in {**TABLES, **FIGURES}.items()}
    if ranking:
        paths.update({k: results / v for k, v in EXPOSURE.items()})
    paths["forgeries"] = [results / d / "forgeries" / f"{m}.parquet"
                          for d in datasets for m in methods]
    paths["forgery_examples"] = [results / "figures" / d / "forgery_examples.png"
                                 for d in datasets]
    paths["face_detection_rates"] = [results / d / "face_detection_rate.csv" for d in datasets]
    return paths


def ranking_enabled(config: Mapping) -> bool:
    """Whether the run studied ranking exposure (config ``ranking.enabled``, default true
    as in the schema)."""
    return bool(config.get("ranking", {}).get("enabled", True))


def read_input(paths: Mapping, key: str) -> pd.DataFrame:
    """The table ``key`` of :func:`report_inputs`; empty when the file is."""
    path = paths.get(key)
    if path is None or not Path(path).is_file():
        raise FileNotFoundError(f"report input {key!r} not found at {path}")
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def _caption(name: str):
    resource = files(__package__) / "captions" / f"{name}.rst"
    if not resource.is_file():
        raise FileNotFoundError(f"caption {resource} is missing")
    return resource


def caption_text(name: str) -> str:
    """The reStructuredText of the caption ``name``."""
    return _caption(name).read_text(encoding="utf-8")


# Keeps the files that as_file had to extract (an install that is not a directory, e.g. a
# zip) until the interpreter exits, so that the paths handed out stay valid; the cache
# extracts each caption once.
_EXTRACTED = ExitStack()
atexit.register(_EXTRACTED.close)


@cache
def caption_path(name: str) -> str:
    """A real file path of the caption ``name``, for Snakemake's ``report(caption=...)``."""
    return str(_EXTRACTED.enter_context(as_file(_caption(name))))
