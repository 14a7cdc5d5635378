"""The statistics behind the verdict: which detector is fairest by each verdict metric, how
sure that is (subject-bootstrap intervals by test inversion; paired subject-level
comparisons of the detectors' gaps and permutation tests against chance, judged on
Holm-adjusted p-values), whether the ranking holds under every test-time variant, and which
group a face ranking exposes most. Detectors that cannot be judged (not trained enough,
constant predictions: ``fairness_standing.csv``) are named and left out of the ranking, and
forgery methods that made fakes for too few of a group's images are named with the counts.
Pure functions from tables to plain sentences; the page escapes and lays them out. No
sentence rests on whether two intervals overlap."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairforge.metrics.conventions import Conventions
from fairforge.perturb import CLEAN
from fairforge.report.text import format_number
from fairforge.report.views import detector_columns
from fairforge.tables.exposure import most_exposed_groups
from fairforge.tables.failures import forgery_shortfalls, group_dependent_failures
from fairforge.tables.fairness import VERDICT_METRICS
from fairforge.tables.standing import MIN_FORGERY_SUCCESS, left_out
from fairforge.tables.variants import sorted_variants

# A Holm-adjusted p-value below this is reported as significant.
ALPHA = 0.05


def _ci_of(ci: pd.DataFrame | None, dataset, detector, metric) -> tuple[float, float]:
    if ci is None or ci.empty:
        return np.nan, np.nan
    row = ci.loc[
        (ci["dataset"] == dataset) & (ci["detector"] == detector) & (ci["metric"] == metric)
    ]
    if row.empty:
        return np.nan, np.nan
    return float(row["ci_low"].iloc[0]), float(row["ci_high"].iloc[0])


def _tests(pvalues: pd.DataFrame | None, test: str) -> pd.DataFrame:
    """The rows of one kind of test (``chance`` or ``paired``); a table written before the
    paired comparisons existed holds chance tests only, without ``p_holm``."""
    if pvalues is None or pvalues.empty:
        return pd.DataFrame(columns=["dataset", "detector", "detector_b", "metric", "p_value"])
    frame = pvalues if "test" in pvalues.columns else pvalues.assign(test="chance")
    frame = frame if "p_holm" in frame.columns else frame.assign(p_holm=np.nan)
    return frame.loc[frame["test"] == test]


def _p_of(pvalues: pd.DataFrame | None, dataset, detector, metric) -> tuple[float, float]:
    """(raw, Holm-adjusted) permutation p-value that a gap is larger than chance."""
    chance = _tests(pvalues, "chance")
    row = chance.loc[
        (chance["dataset"] == dataset)
        & (chance["detector"] == detector)
        & (chance["metric"] == metric)
    ]
    if row.empty:
        return np.nan, np.nan
    return float(row["p_value"].iloc[0]), float(row["p_holm"].iloc[0])


def _paired(pvalues: pd.DataFrame | None, dataset, a, b, metric) -> dict | None:
    """The paired comparison of a and b (in either order), oriented as a − b."""
    paired = _tests(pvalues, "paired")
    for first, second, sign in ((a, b, 1.0), (b, a, -1.0)):
        row = paired.loc[
            (paired["dataset"] == dataset)
            & (paired["detector"] == first)
            & (paired["detector_b"] == second)
            & (paired["metric"] == metric)
        ]
        if len(row):
            r = row.iloc[0]
            low, high = sign * float(r["ci_low"]), sign * float(r["ci_high"])
            return {
                "value": sign * float(r["value"]),
                "low": min(low, high),
                "high": max(low, high),
                "p": float(r["p_value"]),
                "p_holm": float(r["p_holm"]),
            }
    return None


def _judged(p: float, p_holm: float, yes: str, no: str) -> str:
    """'p=…, Holm-adjusted p=… (yes|no)', judged on the adjusted p-value when there is one."""
    if np.isfinite(p_holm):
        return f"p={p:.3g}, Holm-adjusted p={p_holm:.3g} ({yes if p_holm < ALPHA else no})"
    return f"p={p:.3g} (unadjusted; {yes if p < ALPHA else no} at {ALPHA} before adjustment)"


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


def _standing_lines(
    prefix: str, out: dict[str, str], n_detectors: int, shortfalls: list[str], bar: float
) -> list[str]:
    """Which detectors are left out of the ranking and why; which forgeries fell short."""
    lines = []
    if out:
        said = "; ".join(f"{d} ({why})" for d, why in out.items())
        if len(out) == n_detectors:
            lines.append(
                f"{prefix}No detector can be judged on fairness, so none is ranked: {said}. "
                "Their gaps (in the tables, with this reason) are not evidence of fairness: "
                "a detector that calls every face fake, or real, has no gap."
            )
        else:
            lines.append(f"{prefix}Left out of the ranking, as they cannot be judged: {said}.")
    if shortfalls:
        lines.append(
            f"{prefix}Forgeries made for under {bar:.0%} of a group's images: "
            + "; ".join(shortfalls)
            + ". Every gap of this dataset is measured on the fakes that were made and says "
            "nothing about the faces left without one."
        )
    return lines


def verdict(
    fairness: pd.DataFrame,
    ci: pd.DataFrame | None,
    pvalues: pd.DataFrame | None,
    fup: pd.DataFrame | None,
    conventions: Conventions,
    standing: pd.DataFrame | None = None,
    failures: pd.DataFrame | None = None,
    min_forgery_success: float = MIN_FORGERY_SUCCESS,
) -> list[str]:
    """Sentences a reader of the report alone can act on: which detectors cannot be judged
    (``standing``: ``fairness_standing.csv``) and which forgeries fell short for a group
    (``failures``: ``failures_per_group.csv``, methods under ``min_forgery_success``), which
    of the others is fairest by each verdict metric, how sure that is (paired comparisons
    and permutation tests, judged on Holm-adjusted p-values), under which test-time variants
    the fairest detector changes, and which pipeline stages fail some group more often."""
    lines = []
    all_detectors = detector_columns(fairness)
    shortfalls = forgery_shortfalls(failures, min_forgery_success) if failures is not None else {}
    for dataset, table in fairness.groupby("dataset", sort=True):
        table = table.set_index("metric")
        prefix = f"{dataset}: " if fairness["dataset"].nunique() > 1 else ""
        out = {d: why for d, why in left_out(standing, dataset).items() if d in all_detectors}
        lines += _standing_lines(
            prefix, out, len(all_detectors), shortfalls.get(str(dataset), []), min_forgery_success
        )
        detectors = [d for d in all_detectors if d not in out]
        if not detectors:
            continue
        for base in VERDICT_METRICS:
            metric = conventions.metric_name(base)
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
                which = "Only one detector can be judged" if out else "Only one detector"
                text = f"{prefix}{which}, {d}: {metric} = {described[d]}."
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
                    pair = _paired(pvalues, dataset, best, runner, metric)
                    if pair is not None and np.isfinite(pair["p"]):
                        text += (
                            f" Paired subject-level comparison of {best} − {runner}: "
                            f"{format_number(pair['value'])} [95% CI "
                            f"{format_number(pair['low'])}, {format_number(pair['high'])}], "
                            + _judged(
                                pair["p"],
                                pair["p_holm"],
                                "significant after adjustment: the ranking is clear",
                                "not significant after adjustment: these data cannot "
                                "separate the two",
                            )
                            + "."
                        )
                    else:
                        text += " (No paired comparison: metrics.bootstrap is 0 or the table predates it.)"
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
                p, p_holm = _p_of(pvalues, dataset, d, metric)
                if np.isfinite(p):
                    significance.append(
                        f"{d} "
                        + _judged(
                            p, p_holm, "larger than chance", "not distinguishable from chance"
                        )
                    )
            if significance:
                lines.append(
                    f"{prefix}Is the {metric} gap larger than chance (subject-level "
                    f"permutation test)? " + "; ".join(significance) + "."
                )
            pairs = _tests(pvalues, "paired")
            pairs = pairs.loc[
                (pairs["dataset"] == dataset)
                & (pairs["metric"] == metric)
                & pairs["detector"].isin(detectors)
                & pairs["detector_b"].isin(detectors)
            ]
            if len(detectors) > 2 and len(pairs):
                significant = [
                    f"{r.detector} vs {r.detector_b}"
                    for r in pairs.itertuples(index=False)
                    if np.isfinite(r.p_holm) and r.p_holm < ALPHA
                ]
                lines.append(
                    f"{prefix}Paired comparisons of {metric} (every pair of detectors, "
                    f"Holm-adjusted over all the verdict's tests): "
                    + (
                        f"{len(significant)} of {len(pairs)} significant ({', '.join(significant)})."
                        if significant
                        else f"none of {len(pairs)} significant."
                    )
                )
            if fup is not None and not fup.empty and len(detectors) > 1 and metric in fup.columns:
                ranked = fup.loc[(fup["dataset"] == dataset) & fup["detector"].isin(detectors)]
                lines.append(prefix + _ranking_changes(ranked, metric, fairest))
    if failures is not None:
        lines += group_dependent_failures(failures, ALPHA)
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
    """Per study (dataset, distance) and encoder, the group most exposed as a
    false-positive suspect in each setting."""
    top = most_exposed_groups(exposure, "false_positive")
    lines = []
    keys = [c for c in ("dataset", "distance") if c in top.columns and top[c].notna().any()]
    for key, rows in top.groupby([*keys, "encoder"], sort=False):
        encoder = key[-1]
        said = []
        for row in rows.itertuples(index=False):
            text = f"{row.group} in {row.setting} (exposure {format_number(row.exposure)}"
            if row.runner_up:
                text += f"; next {row.runner_up} {format_number(row.runner_up_exposure)}"
            said.append(text + ")")
        first = rows.iloc[0]
        at = f" of {first['dataset']}" if "dataset" in keys else ""
        at += f" at distance {first['distance']}" if "distance" in keys else ""
        lines.append(
            f"Face ranking{at}, {encoder}: the group most exposed as a wrong suspect "
            f"(largest false-positive exposure) is " + ", ".join(said) + "."
        )
    return lines
