"""The tables as the page shows them: wide layouts, "rate (count/total)" and
"value [low, high] p=..." cells, facts in sentences. pandas in, pandas or text out; no HTML."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.recipes import NOT_PAPER_INIT, UNSTATED, unstated_recipe
from fairforge.report.text import format_number
from fairforge.tables.efficiency import clean_metric
from fairforge.tables.forgeries import rate_cells


def backend_table(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Per dataset and forgery method: the backend that made the fakes, attempts and successes."""
    rows = []
    for path in paths:
        path = Path(path)
        frame = pd.read_parquet(path, columns=["method", "backend", "ok"])
        dataset = path.parent.parent.name
        for (method, backend), part in frame.groupby(
            ["method", "backend"], sort=True, dropna=False
        ):
            rows.append(
                {
                    "dataset": dataset,
                    "method": method,
                    "backend": backend,
                    "attempted": len(part),
                    "made": int(part["ok"].sum()),
                }
            )
    return pd.DataFrame(rows, columns=["dataset", "method", "backend", "attempted", "made"])


def failure_summary(failures: pd.DataFrame) -> pd.DataFrame:
    """Rows dataset x stage, one column per group: "rate (failed/n)", with its 95% interval
    "[low, high]" and, after the groups, the test of equal rates with its raw and
    Holm-adjusted p-values where the table has them (``failures_per_group.csv``)."""
    if failures.empty:
        return failures
    frame = failures.assign(dataset=failures["dataset"] if "dataset" in failures else "data")
    none = pd.Series(np.nan, index=frame.index)  # a table written before the intervals
    frame = frame.assign(
        cell=[
            f"{r:.3f} ({f}/{n})" + (f" [{lo:.3f}, {hi:.3f}]" if pd.notna(lo) else "")
            for r, f, n, lo, hi in zip(
                frame["failure_rate"],
                frame["n_failed"],
                frame["n"],
                frame.get("ci_low", none),
                frame.get("ci_high", none),
            )
        ]
    )
    wide = frame.pivot_table(
        index=["dataset", "stage"], columns="group", values="cell", aggfunc="first", sort=False
    )
    wide.columns.name = None
    wide = wide.reset_index()
    if "p_holm" not in frame.columns:
        return wide
    tests = frame.drop_duplicates(["dataset", "stage"])[
        ["dataset", "stage", "test", "p_value", "p_holm"]
    ]
    tests = tests.assign(
        test=tests["test"].fillna(""),
        p_value=tests["p_value"].map(lambda p: f"{p:.3g}" if pd.notna(p) else "–"),
        p_holm=tests["p_holm"].map(lambda p: f"{p:.3g}" if pd.notna(p) else "–"),
    ).rename(columns={"test": "test of equal rates", "p_value": "p", "p_holm": "Holm p"})
    return wide.merge(tests, on=["dataset", "stage"], how="left")


def per_group_accuracy(per_group: pd.DataFrame) -> pd.DataFrame:
    """FairFD Table 1 layout: accuracy per approach and group, with mean, STD and AccGap."""
    wide = per_group.pivot_table(
        index=["dataset", "detector", "approach"], columns="group", values="accuracy", sort=True
    )
    values = wide.to_numpy(float)
    wide["mean"] = np.nanmean(values, axis=1)
    wide["STD"] = np.nanstd(values, axis=1)
    wide["AccGap"] = np.nanmax(values, axis=1) - np.nanmin(values, axis=1)
    wide.columns.name = None
    wide = wide.reset_index()
    # real first, pooled ("all") last, as in the paper
    order = wide["approach"].map(lambda a: (0 if a == "real" else 2 if a == "all" else 1, a))
    return wide.assign(_o=order).sort_values(["dataset", "detector", "_o"]).drop(columns="_o")


def detector_columns(fairness: pd.DataFrame) -> list[str]:
    """The detector columns of the fairness table (every column but dataset, metric, reason)."""
    return [c for c in fairness.columns if c not in ("dataset", "metric", "reason")]


def undefined_metrics_lines(fairness: pd.DataFrame) -> list[str]:
    """One sentence per dataset and reason: which metrics are NaN or computed without some
    cells, and why (the ``reason`` column of the fairness table)."""
    if "reason" not in fairness.columns:
        return []
    rows = fairness.loc[fairness["reason"].astype("string").fillna("") != ""]
    lines = []
    for (dataset, reason), part in rows.groupby(["dataset", "reason"], sort=False):
        lines.append(f"{dataset}: {', '.join(part['metric'].astype(str))}: {reason}.")
    return lines


def fairness_with_uncertainty(
    fairness: pd.DataFrame, ci: pd.DataFrame | None, pvalues: pd.DataFrame | None
) -> pd.DataFrame:
    """The clean fairness table with "value [low, high] p=..." cells."""
    detectors = detector_columns(fairness)
    long = fairness.melt(
        id_vars=["dataset", "metric"], value_vars=detectors, var_name="detector", value_name="value"
    )
    if ci is not None and not ci.empty:
        long = long.merge(
            ci[["dataset", "detector", "metric", "ci_low", "ci_high"]],
            on=["dataset", "detector", "metric"],
            how="left",
        )
    if pvalues is not None and not pvalues.empty:
        long = long.merge(
            chance_tests(pvalues)[["dataset", "detector", "metric", "p_value"]],
            on=["dataset", "detector", "metric"],
            how="left",
        )

    def cell(row) -> str:
        text = format_number(row["value"])
        if pd.notna(row.get("ci_low")) and pd.notna(row.get("ci_high")):
            text += f" [{format_number(row['ci_low'])}, {format_number(row['ci_high'])}]"
        if pd.notna(row.get("p_value")):
            text += f" p={row['p_value']:.3g}"
        return text

    long["cell"] = long.apply(cell, axis=1)
    wide = long.pivot_table(
        index=["dataset", "metric"], columns="detector", values="cell", aggfunc="first", sort=False
    )
    wide.columns.name = None
    return wide.reset_index()


def chance_tests(pvalues: pd.DataFrame) -> pd.DataFrame:
    """The permutation tests "is this gap larger than chance" of the p-value table (all its
    rows when it predates the paired comparisons)."""
    if "test" not in pvalues.columns:
        return pvalues
    return pvalues.loc[pvalues["test"] == "chance"]


def wide_pvalues(pvalues: pd.DataFrame) -> pd.DataFrame:
    """Rows dataset x metric, one column per detector: the permutation p-value, and its
    Holm-adjusted value where the metric is in the verdict's family ("p (Holm p)")."""
    if pvalues.empty:
        return pvalues
    chance = chance_tests(pvalues)
    holm = chance["p_holm"] if "p_holm" in chance.columns else pd.Series(np.nan, chance.index)
    cells = [
        f"{p:.3g}" + (f" (Holm {h:.3g})" if pd.notna(h) else "")
        for p, h in zip(chance["p_value"], holm)
    ]
    wide = chance.assign(cell=cells).pivot_table(
        index=["dataset", "metric"],
        columns="detector",
        values="cell",
        aggfunc="first",
        sort=False,
    )
    wide.columns.name = None
    return wide.reset_index()


def paired_comparisons(pvalues: pd.DataFrame) -> pd.DataFrame:
    """The paired comparisons the verdict judges (Holm family): dataset, metric, the pair,
    the difference of gaps with its basic bootstrap interval, raw and Holm-adjusted p-values."""
    if pvalues.empty or "test" not in pvalues.columns:
        return pd.DataFrame()
    paired = pvalues.loc[(pvalues["test"] == "paired") & pvalues["p_holm"].notna()]
    if paired.empty:  # one detector: nothing to compare
        return pd.DataFrame()
    return pd.DataFrame(
        {
            "dataset": paired["dataset"],
            "metric": paired["metric"],
            "comparison": paired["detector"].astype(str) + " − " + paired["detector_b"].astype(str),
            "difference": [
                f"{format_number(v)} [{format_number(lo)}, {format_number(hi)}]"
                for v, lo, hi in zip(paired["value"], paired["ci_low"], paired["ci_high"])
            ],
            "p": paired["p_value"].map(lambda p: f"{p:.3g}"),
            "Holm p": paired["p_holm"].map(lambda p: f"{p:.3g}"),
        }
    ).reset_index(drop=True)


def side_by_side(
    frame: pd.DataFrame, by: str | Sequence[str], values: Sequence[str]
) -> pd.DataFrame:
    """Rows dataset x metric (in their order), one column per ``by`` value and value column
    named "<by>: <value>" (the csv is long; the page reads better wide)."""
    if frame.empty:
        return frame
    by = [by] if isinstance(by, str) else list(by)
    wide = frame.pivot_table(
        index=["dataset", "metric"], columns=by, values=list(values), aggfunc="first", sort=False
    )
    wide = wide.reorder_levels([*range(1, len(by) + 1), 0], axis=1)
    order = list(dict.fromkeys(frame[by].itertuples(index=False, name=None)))
    wide = wide[[(*key, v) for key in order for v in values]]
    wide.columns = [" / ".join(map(str, c[:-1])) + f": {c[-1]}" for c in wide.columns]
    return wide.reset_index()


def _reasons_text(failures_json: str) -> str:
    """'reason: n; ...' from a JSON object reason -> count ('' when none)."""
    try:
        counts = json.loads(failures_json) if isinstance(failures_json, str) else {}
    except json.JSONDecodeError:
        return str(failures_json)
    return "; ".join(f"{k}: {v}" for k, v in counts.items())


def rates_with_reasons(
    long: pd.DataFrame, index: Sequence[str], rate: str, count: str, total: str
) -> pd.DataFrame:
    """:func:`~fairforge.tables.rate_cells` plus a ``failures`` column: the reasons of the
    ``(all)`` row, "reason: n; ..."."""
    wide = rate_cells(long, index, rate, count, total)
    if wide.empty or "failures" not in long.columns:
        return wide
    totals = long.loc[long["group"] == "(all)", [*index, "failures"]]
    totals = totals.assign(failures=totals["failures"].map(_reasons_text))
    return wide.merge(totals, on=list(index), how="left")


def efficiency_report_table(
    efficiency: pd.DataFrame, detection: pd.DataFrame, metric: str = "AUC"
) -> pd.DataFrame:
    """``efficiency.csv`` with each detector's clean ``metric`` per dataset appended
    ("AUC clean (dataset)")."""
    quality = clean_metric(detection, metric)
    wide = quality.pivot_table(
        index="detector", columns="dataset", values=metric, aggfunc="first", sort=True
    )
    wide.columns = [f"{metric} clean ({d})" for d in wide.columns]
    return efficiency.merge(wide.reset_index(), on="detector", how="left")


def measured_on(efficiency: pd.DataFrame) -> str:
    """'cpu (fp32)' or 'cuda:0 (bf16)': where and in what precision costs were measured."""
    if "device" not in efficiency.columns:
        return "no device (no detector has a network to time)"
    timed = efficiency.dropna(subset=["device"])
    if timed.empty:
        return "no device (no detector has a network to time)"
    dtype = timed["dtype"] if "dtype" in timed.columns else pd.Series("", index=timed.index)
    pairs = sorted(dict.fromkeys(zip(timed["device"].astype(str), dtype.astype(str))))
    return ", ".join(f"{d} ({t})" if t else d for d, t in pairs)


def _share(value: float) -> str:
    return f"{100 * value:.0f}%"


def encoder_facts(
    table: pd.DataFrame, encoders: Mapping, train_dataset: str | None = None
) -> list[str]:
    """How each encoder came to be (trained here, on ``train_dataset``'s identities, or not)
    and how often it found no face."""
    of = f" of {train_dataset}" if train_dataset else ""
    facts = []
    for label, rows in table.groupby("encoder", sort=False):
        train = (encoders.get(label) or {}).get("train")
        if train is not None:
            seen = (
                "far crops at the ranking's first distance"
                if train.get("far")
                else "close-range crops"
            )
            facts.append(
                f"{label}: a {encoders[label].get('encoder', label)} encoder trained "
                f"here on the train-split identities{of} ({seen}, {train.get('head')} "
                f"head, {train.get('epochs')} epochs); those identities are not ranked."
            )
        if "fallback_share_probes" in rows and rows["fallback_share_probes"].notna().any():
            first = rows.iloc[0]
            per_group = {
                c.removeprefix("fallback_probes_"): first[c]
                for c in rows.columns
                if c.startswith("fallback_probes_")
            }
            gallery = rows.drop_duplicates("setting").set_index("setting")["fallback_share_gallery"]
            facts.append(
                f"{label} found no face in {_share(first['fallback_share_probes'])} of the far "
                "probes ("
                + ", ".join(f"{g} {_share(v)}" for g, v in per_group.items())
                + ") and in "
                + ", ".join(f"{_share(v)} of the {s} gallery" for s, v in gallery.items())
                + "; it aligned those on a box calibrated on close-range crops. A group whose "
                "far faces are found less often is ranked on worse chips."
            )
    return facts


def protocol_tables(protocol: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The protocol card (``protocol.csv``, long: section, name, key, value, source) wide:
    ``detectors`` and ``datasets`` (one row each, one column per key, in the card's order)
    and ``sources`` (the detectors' sources, laid out the same)."""

    def wide(section: str, column: str) -> pd.DataFrame:
        part = protocol.loc[protocol["section"] == section]
        if part.empty:
            return pd.DataFrame()
        keys = list(dict.fromkeys(part["key"]))
        names = list(dict.fromkeys(part["name"]))
        table = part.pivot(index="name", columns="key", values=column)
        table = table.reindex(index=names, columns=keys).fillna("")
        label = "detector" if section == "detector" else "dataset"
        return table.rename_axis(index=label, columns=None).reset_index()

    return {
        "detectors": wide("detector", "value"),
        "sources": wide("detector", "source"),
        "datasets": wide("dataset", "value"),
    }


def protocol_lines(protocol: pd.DataFrame) -> list[str]:
    """Facts of the protocol card in sentences: detectors that start from random weights
    where their paper starts from ImageNet weights, and the values a paper leaves unstated."""
    detectors = protocol.loc[protocol["section"] == "detector"].astype({"source": str})
    lines = []
    flagged = detectors.loc[
        (detectors["key"] == "init") & detectors["source"].str.contains(NOT_PAPER_INIT)
    ]
    if not flagged.empty:
        lines.append(
            f"Started from random weights, {NOT_PAPER_INIT} (its paper starts from ImageNet "
            "weights): " + ", ".join(flagged["name"]) + "."
        )
    unstated = detectors.loc[detectors["source"].str.contains(UNSTATED, regex=False)]
    for name, part in unstated.groupby("name", sort=False):
        lines.append(
            f"{name}: its paper leaves {', '.join(part['key'])} unstated (fairforge defaults)."
        )
    recipes = detectors["source"].map(unstated_recipe)
    for (name, recipe), part in detectors.groupby([detectors["name"], recipes], sort=False):
        lines.append(
            f"{name}: its paper leaves {', '.join(part['key'])} unstated (recipe {recipe}'s)."
        )
    return lines
