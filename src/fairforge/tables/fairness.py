"""The fairness tables.

- :func:`fairness_outputs`: the clean fairness table, accuracy per group, the bootstrap
  intervals of every metric and whether each detector can be judged.
- :func:`fairness_under_perturbation`: every :func:`~fairforge.metrics.fairness_report`
  key per detector x variant.
- :func:`pvalue_table`: every test the report makes: subject-level permutation p-values of
  every clean fairness gap, paired comparisons of the detectors' gaps, Holm-adjusted.
- :func:`thresholds_table`: FairFD Table 5, global versus per-group thresholds.
- :func:`grayscale_table`: FairFD Table 6, ``grayscale@1`` next to ``clean``.

Predictions of several datasets are never pooled: every table is computed per dataset and
gets a ``dataset`` column (samples of different datasets can share ids).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import combinations

import numpy as np
import pandas as pd

from fairforge.columns import CLEAN, REAL
from fairforge.metrics.conventions import DEFAULT_CONVENTIONS, Conventions
from fairforge.metrics.fairness import (
    accuracy_matrix,
    fairness_reasons,
    fairness_report,
    fairness_table,
    per_group_long,
    per_group_table,
)
from fairforge.metrics.intervals import bootstrap_table
from fairforge.metrics.multiplicity import holm_adjust
from fairforge.metrics.resampling import stats_from_frame
from fairforge.metrics.significance import paired_differences, permutation_pvalues
from fairforge.metrics.thresholds import compare_thresholds
from fairforge.tables.detectors import TRAINED_ENOUGH_AUC
from fairforge.tables.failures import forgery_shortfalls
from fairforge.tables.predictions import evaluation_rows, groups_of, table_from_files
from fairforge.tables.standing import (
    MAX_CONSTANT_SHARE,
    MIN_FORGERY_SUCCESS,
    NOT_JUDGED_ROWS,
    TrainingRecord,
    left_out,
    standing_table,
)
from fairforge.tables.variants import GRAYSCALE, order_rows, with_variant_info

log = logging.getLogger(__name__)


def _per_dataset(preds: pd.DataFrame):
    if "dataset" not in preds.columns:
        preds = preds.assign(dataset="data")
    yield from preds.groupby("dataset", sort=True)


def fairness_outputs(
    preds: pd.DataFrame,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    bootstrap: int = 0,
    seed: int = 0,
    *,
    training: Mapping[str, TrainingRecord] | None = None,
    min_val_auc: float = TRAINED_ENOUGH_AUC,
    max_constant_share: float = MAX_CONSTANT_SHARE,
    failures: pd.DataFrame | None = None,
    min_forgery_success: float = MIN_FORGERY_SUCCESS,
) -> dict[str, pd.DataFrame]:
    """``table`` (rows: dataset × metric, columns: detectors), ``per_group``, ``ci``
    (subject-level bootstrap intervals of every metric, when ``bootstrap`` > 0) and
    ``standing`` (:func:`~fairforge.tables.standing.standing_table`: whether each detector
    can be judged, from its ``training`` records and its predictions).

    The ``reason`` of every gap of a detector that cannot be judged says why, and that of
    every gap of a dataset names each forgery method that made fakes for under
    ``min_forgery_success`` of a group's images (``failures``: the ``failures.csv`` rows)."""
    tables, per_group, cis, standings = [], [], [], []
    shortfalls = forgery_shortfalls(failures, min_forgery_success) if failures is not None else {}
    for dataset, part in _per_dataset(preds):
        if part["label"].nunique() < 2:
            # e.g. a split where no forgery succeeded: nothing to measure, say so
            log.warning(
                "dataset %s: predictions hold only label %s; no fairness metrics",
                dataset,
                sorted(part["label"].unique()),
            )
            continue
        table = fairness_table(part, conventions=conventions)
        table = table.reset_index().assign(dataset=dataset)
        reasons: dict[tuple, str] = {}  # (detector, metric) -> why it is NaN or partial
        for detector, det_part in part.groupby("detector", sort=True):
            report = table.set_index("metric")[detector].to_dict()
            for metric, why in fairness_reasons(det_part, report, conventions).items():
                reasons[detector, metric] = why
        standing = standing_table(
            part,
            training,
            conventions,
            min_val_auc=min_val_auc,
            max_constant_share=max_constant_share,
        )
        standings.append(standing)
        for detector, why in left_out(standing, dataset).items():
            for metric in table["metric"]:
                if metric not in NOT_JUDGED_ROWS:
                    reasons[detector, metric] = _joined(reasons.get((detector, metric)), why)
        notes = shortfalls.get(str(dataset), [])
        detectors = [c for c in table.columns if c not in ("dataset", "metric")]
        table["reason"] = [
            _joined(
                *(f"{d}: {reasons[d, m]}" for d in detectors if (d, m) in reasons),
                *(notes if m not in NOT_JUDGED_ROWS else []),
            )
            for m in table["metric"]
        ]
        tables.append(table)
        per_group.append(per_group_long(part, conventions=conventions).assign(dataset=dataset))
        if bootstrap:
            ci = bootstrap_table(part, n_boot=bootstrap, seed=seed, conventions=conventions).assign(
                dataset=dataset
            )
            ci["reason"] = [
                _joined(reasons.get((d, m)), *(notes if m not in NOT_JUDGED_ROWS else []))
                for d, m in zip(ci["detector"], ci["metric"])
            ]
            _warn_dropped(ci, dataset)
            cis.append(ci)
    if not tables:
        raise ValueError("no dataset has both real and fake predictions to measure")
    table = pd.concat(tables, ignore_index=True)
    first = ["dataset", "metric"]
    out = {
        "table": table[first + [c for c in table.columns if c not in first]],
        "per_group": _dataset_first(pd.concat(per_group, ignore_index=True)),
        "standing": pd.concat(standings, ignore_index=True),
    }
    out["ci"] = (
        _dataset_first(pd.concat(cis, ignore_index=True))
        if cis
        else pd.DataFrame(
            columns=[
                "dataset",
                "detector",
                "metric",
                "estimate",
                "estimate_bc",
                "ci_low",
                "ci_high",
                "pct_low",
                "pct_high",
                "n_valid",
                "n_boot",
                "dropped_share",
                "reason",
            ]
        )
    )
    return out


def fairness_options(metrics: Mapping) -> dict:
    """Keyword arguments of :func:`fairforge.tables.fairness.fairness_outputs` from the
    config's ``metrics`` block: its conventions and the settings of the outputs."""
    keys = ("bootstrap", "min_val_auc", "max_constant_share", "min_forgery_success")
    return {"conventions": Conventions.from_metrics(metrics)} | {key: metrics[key] for key in keys}


def _joined(*parts: str | None) -> str:
    """The non-empty ``parts``, joined by "; " (a reason column's separator)."""
    return "; ".join(p for p in parts if p)


# A share of dropped bootstrap resamples above this is warned about (log and report).
DROPPED_WARNING = 0.01


def dropped_resamples_note(ci: pd.DataFrame) -> str:
    """A sentence on the bootstrap resamples dropped because a cell changed emptiness:
    the largest share and, above :data:`DROPPED_WARNING`, a warning ('' when none)."""
    if ci.empty or "dropped_share" not in ci.columns:
        return ""
    defined = ci.loc[ci["estimate"].notna()]
    if defined.empty:
        return ""
    worst = defined.loc[defined["dropped_share"].idxmax()]
    share = float(worst["dropped_share"])
    text = (
        f"Bootstrap resamples dropped (a resample that empties a cell the data fill): at most "
        f"{100 * share:.1f}% ({worst['detector']}, {worst['metric']})."
    )
    if share > DROPPED_WARNING:
        text += (
            f" Warning: above {100 * DROPPED_WARNING:.0f}%, the intervals rest on the "
            "resamples that keep every cell, and can be too narrow."
        )
    return text


def _warn_dropped(ci: pd.DataFrame, dataset) -> None:
    heavy = ci.loc[ci["dropped_share"] > DROPPED_WARNING]
    if len(heavy):
        log.warning("dataset %s: %s", dataset, dropped_resamples_note(ci) or "resamples dropped")


def _dataset_first(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[["dataset"] + [c for c in frame.columns if c != "dataset"]]


def fairness_under_perturbation(
    preds: pd.DataFrame,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    split: str | None = "test",
) -> pd.DataFrame:
    """One row per dataset x detector x variant, one column per fairness_report key."""
    rows = []
    for (dataset, detector, variant), part in groups_of(evaluation_rows(preds, split)):
        rows.append(
            {
                "dataset": dataset,
                "detector": detector,
                "variant": variant,
                **fairness_report(part, conventions),
            }
        )
    table = order_rows(with_variant_info(pd.DataFrame(rows)))
    first = ["dataset", "detector", "variant", "operation", "level", "severity", "category"]
    return table[first + [c for c in table.columns if c not in first]]


# The fairness gaps the report's verdict ranks detectors by (lower is fairer); the tests on
# them are the family whose p-values are Holm-adjusted (UR names get the denominator).
VERDICT_METRICS = ("AADPD", "URDEOdds")


def verdict_metric_names(conventions: Conventions) -> list[str]:
    return [conventions.metric_name(m) for m in VERDICT_METRICS]


PVALUE_COLUMNS = [
    "dataset",
    "test",
    "detector",
    "detector_b",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "n_perm",
]


def pvalue_table(
    preds: pd.DataFrame,
    n_perm: int = 1000,
    seed: int = 0,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    split: str | None = "test",
    variant: str = CLEAN,
) -> pd.DataFrame:
    """Every test the report makes about the ``variant`` predictions, with Holm-adjusted
    p-values (``p_holm``) over the family the verdict draws conclusions from: every test on
    a :data:`VERDICT_METRICS` gap, all datasets, detectors and pairs together. Rows of other
    metrics are descriptive: their ``p_holm`` is NaN (a family of every metric would be
    dominated by near-duplicates such as DPD and AccGap, and resampling p-values could then
    never reach significance).

    * ``test`` = ``chance``: is the gap of ``detector`` larger than chance (subject-level
      permutation test, one-sided); ``value`` is the gap.
    * ``test`` = ``paired``: do ``detector`` and ``detector_b`` differ (paired subject-level
      bootstrap of the difference of their gaps, same subjects and resamples for both,
      two-sided); ``value`` is gap(detector) − gap(detector_b) with its basic bootstrap
      interval.

    ``n_perm`` is the number of permutations and of paired resamples.
    """
    rows = []
    preds = evaluation_rows(preds, split)
    if "variant" in preds.columns:
        preds = preds.loc[preds["variant"] == variant]
    c = conventions
    for dataset, part in _per_dataset(preds):
        stats = {}
        for (detector,), det in groups_of(part, ("detector",)):
            observed = fairness_report(det, c)
            pvalues = permutation_pvalues(det, n_perm, seed, c)
            rows += [
                {
                    "dataset": dataset,
                    "test": "chance",
                    "detector": detector,
                    "detector_b": "",
                    "metric": m,
                    "value": observed[m],
                    "p_value": p,
                    "n_perm": n_perm,
                }
                for m, p in pvalues.items()
            ]
            stats[detector] = stats_from_frame(
                det, c.threshold, part_approaches(part), part_groups(part), c.threshold_rule
            )
        for a, b in combinations(sorted(stats), 2):
            diff = paired_differences(stats[a], stats[b], n_perm, seed, 0.95, c.ur_denominator)
            rows += [
                {
                    "dataset": dataset,
                    "test": "paired",
                    "detector": a,
                    "detector_b": b,
                    "metric": r.metric,
                    "value": r.estimate,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                    "p_value": r.p_value,
                    "n_perm": n_perm,
                }
                for r in diff.itertuples(index=False)
            ]
    table = pd.DataFrame(rows, columns=PVALUE_COLUMNS)
    family = table["metric"].isin(verdict_metric_names(c)).to_numpy()
    p_holm = np.full(len(table), np.nan)
    p_holm[family] = holm_adjust(table.loc[family, "p_value"].to_numpy(float))
    table["p_holm"] = p_holm
    return table


def part_approaches(preds: pd.DataFrame) -> list[str]:
    """The approaches of a dataset's predictions, ``real`` first (so that every detector's
    statistics share the rows of the accuracy matrix)."""
    names = sorted(set(preds["method"].astype(str)))
    return [REAL] + [n for n in names if n != REAL] if REAL in names else names


def part_groups(preds: pd.DataFrame) -> list[str]:
    return sorted(set(preds["group"].astype(str)))


#: ``metrics.thresholds.fit_on``: where the per-group thresholds are fitted.
FIT_ON = ("val", "evaluated")


def thresholds_options(metrics: Mapping) -> dict:
    """Keyword arguments of :func:`thresholds_table` from the config's ``metrics`` block:
    the run's conventions, but for the ``thresholds`` sub-block's ur_denominator (null keeps
    ``metrics.ur_denominator``), and its approaches."""
    study = metrics.get("thresholds") or {}
    conventions = Conventions.from_metrics(metrics)
    if study.get("ur_denominator"):
        conventions = replace(conventions, ur_denominator=study["ur_denominator"])
    return {"conventions": conventions, "approaches": study.get("approaches")}


def fitted_on_text(fit_split: str, eval_split: str) -> str:
    """The ``fitted_on`` column: the split the thresholds were fitted on, and when it is the
    evaluated split itself, saying so (FairFD §5.3.2 picks them there)."""
    return f"{fit_split} (the evaluated set)" if fit_split == eval_split else fit_split


def per_approach_rows(test: pd.DataFrame, conventions: Conventions, approaches) -> dict[str, float]:
    """FairFD Table 5(a) at the threshold of ``conventions`` (a number or per group): every
    approach's accuracy per group, ``accuracy[<approach>][<group>]``, and its
    ``STD[<approach>]`` and ``AccGap[<approach>]`` over the groups."""
    matrix = accuracy_matrix(
        test["label"],
        test["method"],
        test["group"],
        test["score"],
        conventions.threshold,
        approaches,
        threshold_rule=conventions.threshold_rule,
    )
    table = per_group_table(matrix).drop(index="overall")
    out = {}
    for approach, row in table.iterrows():
        out.update({f"accuracy[{approach}][{g}]": row[g] for g in matrix.columns})
        out[f"STD[{approach}]"] = row["STD"]
        out[f"AccGap[{approach}]"] = row["AccGap"]
    return out


def thresholds_table(
    preds: pd.DataFrame,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    fit_split: str = "val",
    eval_split: str = "test",
    variant: str = CLEAN,
    *,
    approaches: list[str] | None = None,
) -> pd.DataFrame:
    """FairFD Table 5: utility and fairness on ``eval_split`` at the global threshold of
    ``conventions`` and at per-group thresholds fitted on ``fit_split``, each group's the one that maximises its
    accuracy. ``fit_split == eval_split`` fits them on the evaluated set itself, as FairFD
    §5.3.2 does. ``approaches`` restricts the rows of the accuracy matrix (the paper's
    Table 5: ``["real", "faceswap"]`` with ``ur_denominator="acc"``; config
    ``metrics.thresholds``); None keeps every approach.

    Rows: every fairness_report key, then Table 5(a)'s ``accuracy[<approach>][<group>]``,
    ``STD[<approach>]`` and ``AccGap[<approach>]``, then ``threshold[<group>]`` (the
    thresholds themselves). Columns: dataset, detector, metric, global, per_group, change
    (per_group - global), fitted_on (:func:`fitted_on_text`). A dataset without
    ``fit_split`` predictions (one only tested on) gets its ``global`` column with
    ``per_group`` empty, and ``fitted_on`` says why.
    """
    if "variant" in preds.columns:
        preds = preds.loc[preds["variant"] == variant]
    threshold = conventions.threshold
    rows = []
    for (dataset, detector), part in groups_of(preds, ("dataset", "detector")):
        fit, test = evaluation_rows(part, fit_split), evaluation_rows(part, eval_split)
        if test.empty:
            raise ValueError(
                f"{dataset}/{detector}: no {eval_split!r} predictions to evaluate "
                "(config inference.splits, metrics.evaluation_split)"
            )
        groups = sorted(set(test["group"].astype(str)))
        at_global = per_approach_rows(test, conventions, approaches)
        if fit.empty:  # nothing to fit on: the global column alone, and why
            fitted_on = (
                f"not fitted: no {fit_split!r} predictions on {dataset} (set "
                "metrics.thresholds.fit_on: evaluated to fit on the evaluated set, as FairFD "
                "5.3.2 does)"
            )
            report = fairness_report(test, conventions, approaches)
            at_global.update({f"threshold[{g}]": threshold for g in groups})
            table = pd.DataFrame({"global": {**report, **at_global}, "per_group": np.nan})
        else:
            fitted_on = fitted_on_text(fit_split, eval_split)
            table, fitted = compare_thresholds(fit, test, conventions, approaches)
            per_group = {g: fitted.get(g, threshold) for g in groups}
            at_fitted = per_approach_rows(test, conventions.at(per_group), approaches)
            table = pd.concat([table, pd.DataFrame({"global": at_global, "per_group": at_fitted})])
            for group in sorted(set(groups) | set(fitted)):
                table.loc[f"threshold[{group}]"] = [threshold, fitted.get(group, threshold)]
        rows.append(
            table.reset_index().assign(dataset=dataset, detector=detector, fitted_on=fitted_on)
        )
    table = pd.concat(rows, ignore_index=True)
    table = table.rename(columns={"index": "metric"})
    table["change"] = table["per_group"] - table["global"]
    return table[["dataset", "detector", "metric", "global", "per_group", "change", "fitted_on"]]


def _metric_columns(fup: pd.DataFrame) -> list[str]:
    info = {"dataset", "detector", "variant", "operation", "level", "severity", "category"}
    return [c for c in fup.columns if c not in info]


def grayscale_table(fup: pd.DataFrame, variant: str = GRAYSCALE) -> pd.DataFrame:
    """FairFD Table 6: every metric on ``clean`` and on ``variant`` side by side, per detector.

    Empty (with the columns) when the variant was not evaluated.
    """
    columns = ["dataset", "detector", "metric", CLEAN, "grayscale", "change"]
    if variant not in set(fup["variant"]):
        return pd.DataFrame(columns=columns)
    metrics = _metric_columns(fup)
    rows = []
    for (dataset, detector), part in fup.groupby(["dataset", "detector"], sort=True):
        by_variant = part.set_index("variant")
        if CLEAN not in by_variant.index or variant not in by_variant.index:
            continue
        clean, gray = by_variant.loc[CLEAN, metrics], by_variant.loc[variant, metrics]
        rows.append(
            pd.DataFrame(
                {
                    "dataset": dataset,
                    "detector": detector,
                    "metric": metrics,
                    CLEAN: clean.to_numpy(float),
                    "grayscale": gray.to_numpy(float),
                    "change": (gray - clean).to_numpy(float),
                }
            )
        )
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)


def thresholds_from_files(paths, metrics: Mapping, splits: Sequence[str]) -> pd.DataFrame:
    """:func:`thresholds_table` over prediction files; per-group thresholds are fitted where
    ``metrics.thresholds.fit_on`` says: on the validation split (without validation
    predictions the table is a note saying so), or on the evaluated split itself
    (``evaluated``, FairFD §5.3.2)."""
    fit_on = (metrics.get("thresholds") or {}).get("fit_on", "val")
    if fit_on not in FIT_ON:
        raise ValueError(f"metrics.thresholds.fit_on must be one of {FIT_ON}, got {fit_on!r}")
    evaluated = metrics["evaluation_split"]
    if fit_on == "val" and "val" not in splits:
        return pd.DataFrame(
            {
                "note": [
                    "no validation predictions (config inference.splits "
                    "lacks 'val'): per-group thresholds cannot be fitted"
                ]
            }
        )
    return table_from_files(
        paths,
        thresholds_table,
        **thresholds_options(metrics),
        fit_split=evaluated if fit_on == "evaluated" else "val",
        eval_split=evaluated,
    )
