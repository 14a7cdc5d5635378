"""The pipeline's failures per group, with what can be concluded from them.

- :func:`failure_rates_table`: every stage's failure rate per group (``failures.csv`` of each
  dataset: sources, faces, each forgery method) with its Wilson 95% interval, and per dataset
  and stage the test that every group fails at the same rate, Holm-adjusted over all the
  stages of all the datasets (``results/failures_per_group.csv``).
- :func:`group_dependent_failures`: sentences naming the stages whose failure rate depends
  on group, with the counts.
- :func:`forgery_shortfalls`: the forgery methods that made fakes for too few images of a
  group (config ``metrics.min_forgery_success``), one sentence each.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.metrics.multiplicity import holm_adjust
from fairforge.metrics.rates import equal_rates_test, wilson_interval
from fairforge.seeding import derive_seed

#: The stage name of a forgery method in ``failures.csv``: ``forgery:<method>``.
FORGERY_STAGE = "forgery:"
#: What :func:`failure_rates_table` adds to the columns of ``failures.csv``.
RATE_COLUMNS = ["ci_low", "ci_high", "test", "p_value", "p_holm"]


def read_failures(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The ``failures.csv`` of every dataset, one after the other (rows in input order)."""
    frames = [pd.read_csv(path) for path in paths]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _dataset_of(failures: pd.DataFrame) -> pd.Series:
    if "dataset" in failures.columns:
        return failures["dataset"].astype(str)
    return pd.Series("data", index=failures.index)


def failure_rates_table(failures: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """``failures`` (columns stage, group, n, n_failed, failure_rate, ...) with
    :data:`RATE_COLUMNS` appended: the Wilson 95% interval of each row's failure rate, and on
    every row of a dataset's stage the test of equal rates across its groups (chi-square,
    or Freeman–Halton exact for small counts: :func:`~fairforge.metrics.rates.equal_rates_test`),
    its p-value and the p-value Holm-adjusted over every (dataset, stage) test of the table.
    The rows and the columns given keep their order and values."""
    table = failures.copy()
    if table.empty:
        return table.reindex(columns=[*table.columns, *RATE_COLUMNS])
    n = table["n"].to_numpy(np.int64)
    failed = table["n_failed"].to_numpy(np.int64)
    table["ci_low"], table["ci_high"] = wilson_interval(failed, n)
    keys = pd.MultiIndex.from_arrays([_dataset_of(table), table["stage"].astype(str)])
    tests, raw = {}, []
    for key in dict.fromkeys(keys):
        rows = keys == key
        result = equal_rates_test(failed[rows], n[rows], seed=derive_seed(seed, "failures", *key))
        tests[key] = result
        raw.append(result.p_value)
    adjusted = dict(zip(tests, holm_adjust(raw)))
    table["test"] = [tests[key].test for key in keys]
    table["p_value"] = [tests[key].p_value for key in keys]
    table["p_holm"] = [adjusted[key] for key in keys]
    return table


def _counts(rows: pd.DataFrame, made: bool = False) -> str:
    """'group k/n, ...' of the failures (or, with ``made``, the successes)."""
    said = []
    for row in rows.itertuples(index=False):
        k = row.n - row.n_failed if made else row.n_failed
        said.append(f"{row.group} {int(k)}/{int(row.n)}")
    return ", ".join(said)


def group_dependent_failures(table: pd.DataFrame, alpha: float) -> list[str]:
    """One sentence per (dataset, stage) of :func:`failure_rates_table` whose
    Holm-adjusted p-value is below ``alpha``: the stage, the test and every group's failed
    count out of its attempts."""
    if table.empty or "p_holm" not in table.columns:
        return []
    datasets = _dataset_of(table)
    lines = []
    for (dataset, stage), rows in table.groupby([datasets, table["stage"]], sort=False):
        first = rows.iloc[0]
        if not (np.isfinite(first["p_holm"]) and first["p_holm"] < alpha):
            continue
        lines.append(
            f"{dataset}: the failure rate of {stage} depends on group ({first['test']} test, "
            f"p={first['p_value']:.3g}, Holm-adjusted p={first['p_holm']:.3g}); failed: "
            f"{_counts(rows)}."
        )
    return lines


def forgery_shortfalls(failures: pd.DataFrame, min_success: float) -> dict[str, list[str]]:
    """Per dataset, one sentence per forgery method and group whose share of images with a
    fake is under ``min_success`` ("maskgan made fakes for 7 of 24 tone1 images (29%)").
    ``failures``: ``failures.csv`` rows (stage ``forgery:<method>``, group, n, n_failed)."""
    if failures.empty:
        return {}
    stage = failures["stage"].astype(str)
    rows = failures.loc[stage.str.startswith(FORGERY_STAGE) & (failures["n"] > 0)]
    out: dict[str, list[str]] = {}
    for dataset, row in zip(_dataset_of(rows), rows.itertuples(index=False)):
        made, n = int(row.n - row.n_failed), int(row.n)
        if made / n < min_success:
            method = str(row.stage)[len(FORGERY_STAGE) :]
            out.setdefault(dataset, []).append(
                f"{method} made fakes for {made} of {n} {row.group} images ({made / n:.0%})"
            )
    return out
