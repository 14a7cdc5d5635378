"""The predictions a table is built from: the rows of one split, grouped per dataset x
detector x variant, read one predictions file at a time."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from fairforge.manifest import read_manifest
from fairforge.tables.variants import order_rows

KEYS = ["dataset", "detector", "variant"]


def evaluation_rows(preds: pd.DataFrame, split: str | None = "test") -> pd.DataFrame:
    """Rows of one split (all rows when ``split`` is None or there is no split column)."""
    if split is None or "split" not in preds.columns:
        return preds
    return preds.loc[preds["split"] == split]


def groups_of(preds: pd.DataFrame, keys: Sequence[str] = KEYS):
    missing = [k for k in keys if k not in preds.columns]
    if missing:
        raise ValueError(f"predictions lack column(s) {missing}")
    yield from preds.groupby(list(keys), sort=True, observed=True)


def table_from_files(paths: Iterable[str | Path], build, **kwargs) -> pd.DataFrame:
    """``build(predictions, **kwargs)`` for each predictions file, concatenated.

    Every table here is computed per detector x dataset x variant, which is one file, so
    only one file is in memory at a time however many variants a run has.
    """
    parts = [build(read_manifest(path, contract="predictions"), **kwargs) for path in paths]
    if not parts:
        raise ValueError("no predictions files")
    table = pd.concat(parts, ignore_index=True)
    by = [c for c in ("dataset", "detector", "unit") if c in table.columns]
    if "variant" not in table.columns:
        return table.sort_values(by, kind="stable").reset_index(drop=True)
    return order_rows(table, by)
