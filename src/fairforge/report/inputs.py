"""What the report reads: the tables and figures a run wrote under ``results`` and the
captions shipped with the package.

The captions are package data (``fairforge/report/captions/*.rst``), read through
:mod:`importlib.resources` so that a non-editable install finds them too; they are the same
files ``snakemake --report`` shows (rules point at them with :func:`caption_path`).
"""

from __future__ import annotations

import atexit
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from functools import cache
from importlib.resources import as_file, files
from pathlib import Path

import pandas as pd

from fairforge.paths import RESULTS, report_paths


def report_inputs(
    results: str | Path = RESULTS,
    datasets: Sequence[str] = (),
    methods: Sequence[str] = (),
    ranking: bool = True,
    subjects: bool = False,
    features: bool = False,
    studies: Sequence[str] = (),
) -> dict:
    """Where :func:`build_report` reads each table and figure, under ``results`` (the
    output-path table's :func:`~fairforge.paths.report_paths`, as paths); the ranking study's
    outputs only with ``ranking``, FairFD's subject rates and feature analyses only with
    ``subjects`` and ``features``, the Assessment studies' only those named in ``studies``."""
    paths = report_paths(
        str(results),
        datasets,
        methods,
        ranking,
        subjects=subjects,
        features=features,
        studies=studies,
    )
    return {
        key: [Path(p) for p in value] if isinstance(value, list) else Path(value)
        for key, value in paths.items()
    }


#: Report inputs that are lists of files (one per dataset, method or figure); the others are
#: single files.
LIST_INPUTS = (
    "forgeries",
    "forgery_examples",
    "forgery_quality_figures",
    "face_detection_rates",
    "face_backend_tables",
    "face_backend_figures",
    # frame-mode variants (op@level~frame): face detection on degraded frames, per dataset
    "face_detection_under_perturbation",
    "face_detection_under_perturbation_figures",
)


def paths_from_rule_inputs(inputs: Iterable[tuple[str, object]]) -> dict:
    """The report's paths from a rule's named inputs (``snakemake.input.items()``): list
    inputs stay lists; a single-file input of a disabled stage (the ranking study) arrives as
    an empty list and is left out."""
    paths: dict = {}
    for key, value in inputs:
        files = [value] if isinstance(value, str) else [str(v) for v in value]
        if key in LIST_INPUTS:
            paths[key] = files
        elif files:
            paths[key] = files[0]
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
