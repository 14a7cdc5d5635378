"""Forgery and face-detection success per group, as the report shows them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd


def _reason_counts(reasons: pd.Series) -> str:
    """A JSON object reason -> count (as in ``face_detection_rate.csv``), keys sorted."""
    counts = reasons.fillna("unknown").astype(str).replace("", "unknown").value_counts()
    return json.dumps({k: int(counts[k]) for k in sorted(counts.index)})


def forgery_success_table(manifests: Iterable[str | Path]) -> pd.DataFrame:
    """Per dataset, forgery method and group: attempted, made (``ok``), success_rate and
    ``failures`` (a JSON object reason -> count). Each method's last row, group ``(all)``,
    totals every group. The dataset is read from the path
    (``results/{dataset}/forgeries/{method}.parquet``)."""
    rows = []
    for path in manifests:
        path = Path(path)
        frame = pd.read_parquet(path, columns=["method", "group", "ok", "reason"])
        frame = frame.assign(group=frame["group"].astype(str), ok=frame["ok"].astype(bool))
        dataset = path.parent.parent.name

        def summarise(part: pd.DataFrame, method: str, group: str, dataset=dataset) -> dict:
            made = int(part["ok"].sum())
            return {
                "dataset": dataset,
                "method": method,
                "group": group,
                "attempted": len(part),
                "made": made,
                "success_rate": made / len(part) if len(part) else np.nan,
                "failures": _reason_counts(part.loc[~part["ok"], "reason"]),
            }

        for method, by_method in frame.groupby("method", sort=True):
            rows += [
                summarise(part, method, group)
                for group, part in by_method.groupby("group", sort=True)
            ]
            rows.append(summarise(by_method, method, "(all)"))
    columns = ["dataset", "method", "group", "attempted", "made", "success_rate", "failures"]
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values(["dataset", "method"], kind="stable").reset_index(drop=True)


def rate_cells(
    table: pd.DataFrame, index: Sequence[str], rate: str, count: str, total: str
) -> pd.DataFrame:
    """Rows ``index``, one column per group (``(all)`` last): "rate (count/total)"."""
    if table.empty:
        return table
    frame = table.assign(
        cell=[f"{r:.3f} ({c}/{t})" for r, c, t in zip(table[rate], table[count], table[total])]
    )
    groups = sorted(set(frame["group"]) - {"(all)"}) + (
        ["(all)"] if "(all)" in set(frame["group"]) else []
    )
    wide = frame.pivot_table(
        index=list(index), columns="group", values="cell", aggfunc="first", sort=True
    ).reindex(columns=groups)
    wide.columns.name = None
    return wide.reset_index()


def crop_outside_cells(rates: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset, one column per group (``(all)`` last): the mean share of the
    aligned crops that lies outside their photo (``outside_fraction`` of
    :func:`face_detection_rates`), to three decimals; empty where no face was found or the
    faces manifest predates the column."""
    if rates.empty or "outside_fraction" not in rates.columns:
        return pd.DataFrame(columns=["dataset"])
    frame = rates.assign(
        cell=[f"{v:.3f}" if pd.notna(v) else "" for v in rates["outside_fraction"]]
    )
    groups = sorted(set(frame["group"]) - {"(all)"}) + (
        ["(all)"] if "(all)" in set(frame["group"]) else []
    )
    wide = frame.pivot_table(
        index="dataset", columns="group", values="cell", aggfunc="first", sort=True
    ).reindex(columns=groups)
    wide.columns.name = None
    return wide.reset_index()


def face_detection_rates(paths: Iterable[str | Path]) -> pd.DataFrame:
    """``face_detection_rate.csv`` of every dataset (``results/{dataset}/...``), with a
    ``dataset`` column first."""
    frames = []
    for path in paths:
        path = Path(path)
        frame = pd.read_csv(path, dtype={"group": str})
        frames.append(frame.assign(dataset=path.parent.name))
    if not frames:
        return pd.DataFrame(columns=["dataset", "group", "n", "n_detected", "rate", "failures"])
    table = pd.concat(frames, ignore_index=True)
    return table[["dataset"] + [c for c in table.columns if c != "dataset"]]
