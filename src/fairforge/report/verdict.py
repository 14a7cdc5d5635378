"""The statistics behind the verdict: which detector is fairest by each verdict metric, how
sure that is (bootstrap intervals, permutation p-values), whether the ranking holds under
every test-time variant, and which group a face ranking exposes most. Pure functions from
tables to plain sentences; the page escapes and lays them out."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairforge.perturb import CLEAN
from fairforge.report.text import format_number
from fairforge.report.views import detector_columns
from fairforge.tables.exposure import most_exposed_groups
from fairforge.tables.variants import sorted_variants

# Fairness gaps the verdict ranks detectors by (lower is fairer).
VERDICT_METRICS = ("AADPD", "URDEOdds")
# A p-value below this is reported as "larger than chance".
ALPHA = 0.05


def _metric_name(metric: str, ur_denominator: str) -> str:
    return f"{metric}_{ur_denominator}" if metric.startswith("UR") else metric


def _ci_of(ci: pd.DataFrame | None, dataset, detector, metric) -> tuple[float, float]:
    if ci is None or ci.empty:
        return np.nan, np.nan
    row = ci.loc[
        (ci["dataset"] == dataset) & (ci["detector"] == detector) & (ci["metric"] == metric)
    ]
    if row.empty:
        return np.nan, np.nan
    return float(row["ci_low"].iloc[0]), float(row["ci_high"].iloc[0])


def _p_of(pvalues: pd.DataFrame | None, dataset, detector, metric) -> float:
    if pvalues is None or pvalues.empty:
        return np.nan
    row = pvalues.loc[
        (pvalues["dataset"] == dataset)
        & (pvalues["detector"] == detector)
        & (pvalues["metric"] == metric)
    ]
    return float(row["p_value"].iloc[0]) if len(row) else np.nan


def _with_ci(value: float, low: float, high: float) -> str:
    if np.isfinite(low) and np.isfinite(high):
        return f"{format_number(value)} [95% CI {format_number(low)}, {format_number(high)}]"
    return format_number(value)


def _fairest(values: pd.Series) -> list[str]:
    finite = values.dropna()
    if finite.empty:
        return []
    best = finite.min()
    return sorted(finite.index[np.isclose(finite.to_numpy(float), best, rtol=0, atol=1e-12)])


def verdict(
    fairness: pd.DataFrame,
    ci: pd.DataFrame | None,
    pvalues: pd.DataFrame | None,
    fup: pd.DataFrame | None,
    ur_denominator: str,
) -> list[str]:
    """Sentences a reader of the report alone can act on: which detector is fairest by each
    verdict metric, how sure that is (CI overlap, permutation p-values), and under which
    test-time variants the fairest detector changes."""
    lines = []
    detectors = detector_columns(fairness)
    for dataset, table in fairness.groupby("dataset", sort=True):
        table = table.set_index("metric")
        prefix = f"{dataset}: " if fairness["dataset"].nunique() > 1 else ""
        for base in VERDICT_METRICS:
            metric = _metric_name(base, ur_denominator)
            if metric not in table.index:
                continue
            values = table.loc[metric, detectors].astype(float)
            fairest = _fairest(values)
            if not fairest:
                lines.append(f"{prefix}{metric} is undefined for every detector (empty cells).")
                continue
            low_high = {d: _ci_of(ci, dataset, d, metric) for d in detectors}
            described = {d: _with_ci(values[d], *low_high[d]) for d in detectors}
            if len(detectors) == 1:
                d = detectors[0]
                text = f"{prefix}Only one detector, {d}: {metric} = {described[d]}."
            elif len(fairest) > 1:
                text = (
                    f"{prefix}By {metric} (lower is fairer) {', '.join(fairest)} tie at "
                    f"{format_number(values[fairest[0]])}."
                )
            else:
                best = fairest[0]
                others = values.drop(best).dropna().sort_values()
                text = f"{prefix}By {metric} (lower is fairer) the fairest detector is {best}: {described[best]}"
                if len(others):
                    runner = others.index[0]
                    text += f"; next is {runner}: {described[runner]}."
                    b_low, b_high = low_high[best]
                    r_low, _ = low_high[runner]
                    if np.isfinite(b_high) and np.isfinite(r_low):
                        text += (
                            " The intervals do not overlap: the ranking is clear at this sample size."
                            if b_high < r_low
                            else " The intervals overlap: these data cannot separate the two."
                        )
                    else:
                        text += " (No bootstrap intervals: metrics.bootstrap is 0.)"
                else:
                    text += "."
            auc = table.loc["AUC", fairest[0]] if "AUC" in table.index else np.nan
            if np.isfinite(auc) and auc < 0.6:
                text += (
                    f" Caution: {fairest[0]} has AUC {format_number(float(auc))}, close to chance; a "
                    "detector that barely detects can look fair."
                )
            lines.append(text)
            significance = []
            for d in detectors:
                p = _p_of(pvalues, dataset, d, metric)
                if np.isfinite(p):
                    significance.append(
                        f"{d} p={p:.3g} ("
                        + ("larger than chance" if p < ALPHA else "not distinguishable from chance")
                        + ")"
                    )
            if significance:
                lines.append(
                    f"{prefix}Is the {metric} gap larger than chance (subject-level "
                    f"permutation test)? " + "; ".join(significance) + "."
                )
            if fup is not None and not fup.empty and len(detectors) > 1 and metric in fup.columns:
                lines.append(
                    prefix + _ranking_changes(fup.loc[fup["dataset"] == dataset], metric, fairest)
                )
    return lines


def _ranking_changes(fup: pd.DataFrame, metric: str, clean_fairest: list[str]) -> str:
    by_variant = fup.pivot_table(
        index="variant", columns="detector", values=metric, aggfunc="first"
    )
    variants = [v for v in sorted_variants(by_variant.index) if v != CLEAN]
    if not variants:
        return f"Only clean predictions were evaluated; no ranking under {metric} to compare."
    changed = []
    for v in variants:
        fairest = _fairest(by_variant.loc[v])
        if fairest != clean_fairest:
            changed.append(f"{v} ({', '.join(fairest) or 'undefined'})")
    if not changed:
        return (
            f"The fairest detector by {metric} is the same under all {len(variants)} "
            "evaluated variants."
        )
    return (
        f"The fairest detector by {metric} changes under {len(changed)} of {len(variants)} "
        f"variants: {'; '.join(changed)}."
    )


def exposure_verdict(exposure: pd.DataFrame) -> list[str]:
    """Per encoder, the group most exposed as a false-positive suspect in each setting."""
    top = most_exposed_groups(exposure, "false_positive")
    lines = []
    for encoder, rows in top.groupby("encoder", sort=False):
        said = []
        for row in rows.itertuples(index=False):
            text = f"{row.group} in {row.setting} (exposure {format_number(row.exposure)}"
            if row.runner_up:
                text += f"; next {row.runner_up} {format_number(row.runner_up_exposure)}"
            said.append(text + ")")
        distance = rows["distance"].iloc[0]
        at = f" at distance {int(distance)}" if pd.notna(distance) else ""
        lines.append(
            f"Face ranking{at}, {encoder}: the group most exposed as a wrong suspect "
            f"(largest false-positive exposure) is " + ", ".join(said) + "."
        )
    return lines
