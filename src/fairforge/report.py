"""The self-contained HTML report: every table and figure of a run, with captions and a verdict.

:func:`build_report` reads the tables the workflow wrote (paths from :func:`report_inputs`)
and returns one HTML page: figures embedded as base64 PNG, tables as HTML, no external
file and no timestamp, so the same results give the same bytes. Captions come from
``resources/report/*.rst`` (the same files ``snakemake --report`` shows).
"""
from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from fairforge.tables import (CLEAN, GRAYSCALE, clean_metric, exposure_matrix,
                              exposure_summary, face_detection_rates, forgery_success_table,
                              most_exposed_groups, rate_cells, sorted_variants, split_variants)

CAPTIONS = Path(__file__).resolve().parents[2] / "resources" / "report"

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
SYNTHETIC_NOTE = ("The data is the synthetic default: groups are skin-tone bins of a synthetic "
                  "renderer, not races. The numbers exercise the method; they say nothing "
                  "about any detector's bias against real people.")
# Fairness gaps the verdict ranks detectors by (lower is fairer).
VERDICT_METRICS = ("AADPD", "URDEOdds")
# A p-value below this is reported as "larger than chance".
ALPHA = 0.05


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


# --------------------------------------------------------------------------- html pieces

def _fmt(value) -> str:
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            return "–"
        return f"{value:.4g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"
    return str(value)


def table_html(frame: pd.DataFrame, index: bool = False, max_rows: int = 400) -> str:
    if frame is None or frame.empty:
        return '<p class="empty">(empty)</p>'
    shown = frame.head(max_rows)
    out = shown.to_html(index=index, border=0, classes="t", na_rep="–", escape=True,
                        float_format=_fmt, justify="left")
    if len(frame) > max_rows:
        out += f'<p class="note">First {max_rows} of {len(frame)} rows; the csv holds all.</p>'
    return out


def figure_html(path: str | Path, alt: str) -> str:
    path = Path(path)
    if not path.is_file():
        return f'<p class="empty">(figure {html.escape(path.name)} missing)</p>'
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def caption_html(name: str) -> str:
    """The caption ``resources/report/{name}.rst`` rendered to HTML by docutils."""
    path = CAPTIONS / f"{name}.rst"
    if not path.is_file():
        raise FileNotFoundError(f"caption {path} is missing")
    from docutils.core import publish_parts
    from docutils.writers.html5_polyglot import Writer
    parts = publish_parts(path.read_text(), writer=Writer(),
                          settings_overrides={"report_level": 5, "halt_level": 5})
    return f'<div class="caption">{parts["body"]}</div>'


def _p(text: str, cls: str | None = None) -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<p{attr}>{html.escape(text)}</p>"


def _section(anchor: str, title: str, *parts: str) -> str:
    return f'<section id="{anchor}"><h2>{html.escape(title)}</h2>\n' + "\n".join(parts) + "</section>"


def _read(paths: Mapping, key: str) -> pd.DataFrame:
    path = paths.get(key)
    if path is None or not Path(path).is_file():
        raise FileNotFoundError(f"report input {key!r} not found at {path}")
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


# --------------------------------------------------------------------------- run summary

def ur_convention(ur_denominator: str) -> str:
    if ur_denominator == "acc":
        return ("UR metrics divide each approach's gap by its mean accuracy over groups "
                "(d_f = mean accuracy; FairFD equation 3 and Table 5(b)); their names end in _acc.")
    return ("UR metrics divide each approach's gap by 1 + its mean accuracy over groups "
            "(d_f = 1 + mean accuracy; FairFD Table 3 and its public code); their names end "
            "in _one_plus_acc.")


def backend_table(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Per dataset and forgery method: the backend that made the fakes, attempts and successes."""
    rows = []
    for path in paths:
        path = Path(path)
        frame = pd.read_parquet(path, columns=["method", "backend", "ok"])
        dataset = path.parent.parent.name
        for (method, backend), part in frame.groupby(["method", "backend"], sort=True, dropna=False):
            rows.append({"dataset": dataset, "method": method, "backend": backend,
                         "attempted": len(part), "made": int(part["ok"].sum())})
    return pd.DataFrame(rows, columns=["dataset", "method", "backend", "attempted", "made"])


def failure_summary(failures: pd.DataFrame) -> pd.DataFrame:
    """Rows dataset x stage, one column per group: "rate (failed/n)"."""
    if failures.empty:
        return failures
    frame = failures.assign(dataset=failures["dataset"] if "dataset" in failures else "data")
    frame = frame.assign(cell=[f"{r:.3f} ({f}/{n})" for r, f, n in
                               zip(frame["failure_rate"], frame["n_failed"], frame["n"])])
    wide = frame.pivot_table(index=["dataset", "stage"], columns="group", values="cell",
                             aggfunc="first", sort=False)
    wide.columns.name = None
    return wide.reset_index()


def per_group_accuracy(per_group: pd.DataFrame) -> pd.DataFrame:
    """FairFD Table 1 layout: accuracy per approach and group, with mean, STD and AccGap."""
    wide = per_group.pivot_table(index=["dataset", "detector", "approach"], columns="group",
                                 values="accuracy", sort=True)
    values = wide.to_numpy(float)
    wide["mean"] = np.nanmean(values, axis=1)
    wide["STD"] = np.nanstd(values, axis=1)
    wide["AccGap"] = np.nanmax(values, axis=1) - np.nanmin(values, axis=1)
    wide.columns.name = None
    wide = wide.reset_index()
    # real first, pooled ("all") last, as in the paper
    order = wide["approach"].map(lambda a: (0 if a == "real" else 2 if a == "all" else 1, a))
    return wide.assign(_o=order).sort_values(["dataset", "detector", "_o"]).drop(columns="_o")


def fairness_with_uncertainty(fairness: pd.DataFrame, ci: pd.DataFrame | None,
                              pvalues: pd.DataFrame | None) -> pd.DataFrame:
    """The clean fairness table with "value [low, high] p=..." cells."""
    detectors = [c for c in fairness.columns if c not in ("dataset", "metric")]
    long = fairness.melt(id_vars=["dataset", "metric"], value_vars=detectors,
                         var_name="detector", value_name="value")
    if ci is not None and not ci.empty:
        long = long.merge(ci[["dataset", "detector", "metric", "ci_low", "ci_high"]],
                          on=["dataset", "detector", "metric"], how="left")
    if pvalues is not None and not pvalues.empty:
        long = long.merge(pvalues[["dataset", "detector", "metric", "p_value"]],
                          on=["dataset", "detector", "metric"], how="left")

    def cell(row) -> str:
        text = _fmt(row["value"])
        if pd.notna(row.get("ci_low")) and pd.notna(row.get("ci_high")):
            text += f" [{_fmt(row['ci_low'])}, {_fmt(row['ci_high'])}]"
        if pd.notna(row.get("p_value")):
            text += f" p={row['p_value']:.3g}"
        return text

    long["cell"] = long.apply(cell, axis=1)
    wide = long.pivot_table(index=["dataset", "metric"], columns="detector", values="cell",
                            aggfunc="first", sort=False)
    wide.columns.name = None
    return wide.reset_index()


# --------------------------------------------------------------------------- verdict

def _metric_name(metric: str, ur_denominator: str) -> str:
    return f"{metric}_{ur_denominator}" if metric.startswith("UR") else metric


def _ci_of(ci: pd.DataFrame | None, dataset, detector, metric) -> tuple[float, float]:
    if ci is None or ci.empty:
        return np.nan, np.nan
    row = ci.loc[(ci["dataset"] == dataset) & (ci["detector"] == detector) & (ci["metric"] == metric)]
    if row.empty:
        return np.nan, np.nan
    return float(row["ci_low"].iloc[0]), float(row["ci_high"].iloc[0])


def _p_of(pvalues: pd.DataFrame | None, dataset, detector, metric) -> float:
    if pvalues is None or pvalues.empty:
        return np.nan
    row = pvalues.loc[(pvalues["dataset"] == dataset) & (pvalues["detector"] == detector)
                      & (pvalues["metric"] == metric)]
    return float(row["p_value"].iloc[0]) if len(row) else np.nan


def _with_ci(value: float, low: float, high: float) -> str:
    if np.isfinite(low) and np.isfinite(high):
        return f"{_fmt(value)} [95% CI {_fmt(low)}, {_fmt(high)}]"
    return _fmt(value)


def _fairest(values: pd.Series) -> list[str]:
    finite = values.dropna()
    if finite.empty:
        return []
    best = finite.min()
    return sorted(finite.index[np.isclose(finite.to_numpy(float), best, rtol=0, atol=1e-12)])


def verdict(fairness: pd.DataFrame, ci: pd.DataFrame | None, pvalues: pd.DataFrame | None,
            fup: pd.DataFrame | None, ur_denominator: str) -> list[str]:
    """Sentences a reader of the report alone can act on: which detector is fairest by each
    verdict metric, how sure that is (CI overlap, permutation p-values), and under which
    test-time variants the fairest detector changes."""
    lines = []
    detectors = [c for c in fairness.columns if c not in ("dataset", "metric")]
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
                text = (f"{prefix}By {metric} (lower is fairer) {', '.join(fairest)} tie at "
                        f"{_fmt(values[fairest[0]])}.")
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
                        text += (" The intervals do not overlap: the ranking is clear at this sample size."
                                 if b_high < r_low else
                                 " The intervals overlap: these data cannot separate the two.")
                    else:
                        text += " (No bootstrap intervals: metrics.bootstrap is 0.)"
                else:
                    text += "."
            auc = table.loc["AUC", fairest[0]] if "AUC" in table.index else np.nan
            if np.isfinite(auc) and auc < 0.6:
                text += (f" Caution: {fairest[0]} has AUC {_fmt(float(auc))}, close to chance; a "
                         "detector that barely detects can look fair.")
            lines.append(text)
            significance = []
            for d in detectors:
                p = _p_of(pvalues, dataset, d, metric)
                if np.isfinite(p):
                    significance.append(f"{d} p={p:.3g} ("
                                        + ("larger than chance" if p < ALPHA else
                                           "not distinguishable from chance") + ")")
            if significance:
                lines.append(f"{prefix}Is the {metric} gap larger than chance (subject-level "
                             f"permutation test)? " + "; ".join(significance) + ".")
            if fup is not None and not fup.empty and len(detectors) > 1 and metric in fup.columns:
                lines.append(prefix + _ranking_changes(fup.loc[fup["dataset"] == dataset],
                                                       metric, fairest))
    return lines


def _ranking_changes(fup: pd.DataFrame, metric: str, clean_fairest: list[str]) -> str:
    by_variant = fup.pivot_table(index="variant", columns="detector", values=metric,
                                 aggfunc="first")
    variants = [v for v in sorted_variants(by_variant.index) if v != CLEAN]
    if not variants:
        return f"Only clean predictions were evaluated; no ranking under {metric} to compare."
    changed = []
    for v in variants:
        fairest = _fairest(by_variant.loc[v])
        if fairest != clean_fairest:
            changed.append(f"{v} ({', '.join(fairest) or 'undefined'})")
    if not changed:
        return (f"The fairest detector by {metric} is the same under all {len(variants)} "
                "evaluated variants.")
    return (f"The fairest detector by {metric} changes under {len(changed)} of {len(variants)} "
            f"variants: {'; '.join(changed)}.")


# --------------------------------------------------------------------------- sections

def _run_section(config: Mapping, paths: Mapping, detectors: pd.DataFrame) -> str:
    m = config.get("metrics", {})
    ur = m.get("ur_denominator", "one_plus_acc")
    datasets = pd.DataFrame([{"dataset": name, "adapter": d.get("adapter"),
                              "groups from": ", ".join(d.get("group_by", []) or ["group"])}
                             for name, d in config.get("datasets", {}).items()])
    available, unavailable = split_variants(config.get("variants", [CLEAN]))
    unavailable_frame = pd.DataFrame([{"variant": v, "reason": r} for v, r in unavailable.items()],
                                     columns=["variant", "reason"])
    forgeries = [p for p in paths.get("forgeries", []) if Path(p).is_file()]
    parts = [caption_html("run"),
             "<h3>Datasets</h3>", table_html(datasets),
             "<h3>Detectors</h3>", table_html(detectors),
             "<h3>Forgeries and the backend that made them</h3>", table_html(backend_table(forgeries)),
             "<h3>Test-time variants</h3>",
             _p("Evaluated: " + ", ".join(available) + "."),
             _p("Unavailable (not evaluated, see why):" if unavailable else
                "Every configured variant was available."),
             table_html(unavailable_frame) if unavailable else "",
             "<h3>Conventions</h3>",
             "<ul>" + "".join(f"<li>{html.escape(t)}</li>" for t in [
                 f"Evaluation on the {m.get('evaluation_split', 'test')} split; the validation "
                 "split only fits the per-group thresholds.",
                 f"A sample is predicted fake when its score > {m.get('threshold', 0.5)}.",
                 ur_convention(ur),
                 f"Confidence intervals: 2.5/97.5 percentiles of {m.get('bootstrap', 0)} "
                 "subject-level bootstrap resamples (subjects resampled within their group).",
                 "p-values: one-sided subject-level permutation test (group labels shuffled "
                 "across subjects): the chance of a gap at least this large if groups did not matter.",
             ]) + "</ul>"]
    return _section("run", "What was run", *parts)


def _detection_section(detection: pd.DataFrame) -> str:
    return _section("detection", "Detection quality", caption_html("detection_table"),
                    table_html(detection))


def _fairness_section(paths: Mapping, fairness, ci, pvalues) -> str:
    per_group = _read(paths, "fairness_per_group")
    return _section("fairness", "Fairness on clean test data", caption_html("fairness_table"),
                    _p("Cells read: value [2.5 %, 97.5 % subject-bootstrap interval] "
                       "p=permutation p-value (gaps only).", "note"),
                    table_html(fairness_with_uncertainty(fairness, ci, pvalues)),
                    "<h3>Accuracy per approach and group</h3>", caption_html("per_group"),
                    table_html(per_group_accuracy(per_group)),
                    "<h3>Permutation p-values</h3>", caption_html("fairness_pvalues"),
                    table_html(_wide_pvalues(pvalues)))


def _wide_pvalues(pvalues: pd.DataFrame) -> pd.DataFrame:
    if pvalues.empty:
        return pvalues
    wide = pvalues.pivot_table(index=["dataset", "metric"], columns="detector",
                               values="p_value", aggfunc="first", sort=False)
    wide.columns.name = None
    return wide.reset_index()


def _robustness_section(paths: Mapping, robustness: pd.DataFrame) -> str:
    variants = robustness.loc[robustness["scope"] == "variant"]
    wide = variants.pivot_table(index=["dataset", "detector"], columns="variant", values="AUC",
                                aggfunc="first")
    wide = wide.reindex(columns=sorted_variants(wide.columns))
    wide.columns.name = None
    summary = robustness.loc[robustness["scope"] != "variant"].pivot_table(
        index=["dataset", "detector"], columns="category", values="AUC", aggfunc="first")
    summary.columns.name = None
    if "all" in summary.columns:
        summary = summary[["all"] + [c for c in summary.columns if c != "all"]]
        summary = summary.rename(columns={"all": "overall robustness score"})
    return _section("robustness", "Robustness to real-world degradations",
                    caption_html("robustness_table"),
                    figure_html(paths["robustness_figure"], "AUC against severity"),
                    caption_html("robustness_figure"),
                    "<h3>AUC per variant</h3>", table_html(wide.reset_index()),
                    "<h3>Mean AUC per operation category and overall</h3>",
                    table_html(summary.reset_index()))


def _perturbed_fairness_section(paths: Mapping, fup: pd.DataFrame, ur: str) -> str:
    keep = ["dataset", "detector", "variant", "AUC", "ACC", "AADPD", f"URDEOdds_{ur}",
            "pooled_DEOdds", "pooled_AccGap"]
    return _section("fairness-perturbed", "Fairness under degradations",
                    caption_html("fairness_under_perturbation"),
                    figure_html(paths["fairness_heatmap"], "fairness heatmap"),
                    caption_html("fairness_heatmap"),
                    table_html(fup[[c for c in keep if c in fup.columns]]))


def side_by_side(frame: pd.DataFrame, by: str | Sequence[str], values: Sequence[str]) -> pd.DataFrame:
    """Rows dataset x metric (in their order), one column per ``by`` value and value column
    named "<by>: <value>" (the csv is long; the page reads better wide)."""
    if frame.empty:
        return frame
    by = [by] if isinstance(by, str) else list(by)
    wide = frame.pivot_table(index=["dataset", "metric"], columns=by, values=list(values),
                             aggfunc="first", sort=False)
    wide = wide.reorder_levels([*range(1, len(by) + 1), 0], axis=1)
    order = list(dict.fromkeys(frame[by].itertuples(index=False, name=None)))
    wide = wide[[(*key, v) for key in order for v in values]]
    wide.columns = [" / ".join(map(str, c[:-1])) + f": {c[-1]}" for c in wide.columns]
    return wide.reset_index()


def _thresholds_section(thresholds: pd.DataFrame) -> str:
    body = (_p(str(thresholds["note"].iloc[0])) if "note" in thresholds.columns else
            table_html(side_by_side(thresholds, "detector", ["global", "per_group"])))
    return _section("thresholds", "Per-group thresholds (FairFD Table 5)",
                    caption_html("thresholds_table"), body)


def _grayscale_section(grayscale: pd.DataFrame, evaluated: Sequence[str]) -> str:
    if grayscale.empty:
        body = _p(f"Not evaluated: add {GRAYSCALE} to the variants to compare." if GRAYSCALE
                  not in evaluated else "No detector has both clean and grayscale predictions.")
    else:
        body = table_html(side_by_side(grayscale, "detector", ["clean", "grayscale"]))
    return _section("grayscale", "Grayscale test images (FairFD Table 6)",
                    caption_html("grayscale_table"), body)


def _balanced_section(balanced: pd.DataFrame) -> str:
    if balanced.empty:
        body = _p("No pair of detectors differs only in balanced training; configure a twin "
                  "with `balanced: true` to compare.")
    else:
        body = table_html(side_by_side(balanced, ["detector", "balanced_detector"],
                                       ["standard", "balanced"]))
    return _section("balanced", "Demographically balanced training (FairFD Table 4)",
                    caption_html("balanced_table"), body)


def _generalization_section(generalization: pd.DataFrame) -> str:
    if "note" in generalization.columns:
        body = _p(str(generalization["note"].iloc[0]))
    else:
        body = table_html(generalization)
    return _section("generalization", "Cross-dataset generalization",
                    caption_html("generalization"), body)


def _reasons_text(failures_json: str) -> str:
    """'reason: n; ...' from a JSON object reason -> count ('' when none)."""
    import json

    try:
        counts = json.loads(failures_json) if isinstance(failures_json, str) else {}
    except json.JSONDecodeError:
        return str(failures_json)
    return "; ".join(f"{k}: {v}" for k, v in counts.items())


def rates_with_reasons(long: pd.DataFrame, index: Sequence[str], rate: str, count: str,
                       total: str) -> pd.DataFrame:
    """:func:`~fairforge.tables.rate_cells` plus a ``failures`` column: the reasons of the
    ``(all)`` row, "reason: n; ..."."""
    wide = rate_cells(long, index, rate, count, total)
    if wide.empty or "failures" not in long.columns:
        return wide
    totals = long.loc[long["group"] == "(all)", [*index, "failures"]]
    totals = totals.assign(failures=totals["failures"].map(_reasons_text))
    return wide.merge(totals, on=list(index), how="left")


def _failures_section(paths: Mapping, failures: pd.DataFrame) -> str:
    rates = face_detection_rates(paths.get("face_detection_rates", []))
    return _section("failures", "Face-detection and forgery failures per group",
                    caption_html("failures"), table_html(failure_summary(failures)),
                    figure_html(paths["failures_figure"], "failure rates per group"),
                    "<h3>Face detection rate per group</h3>", caption_html("face_detection_rate"),
                    table_html(rates_with_reasons(rates, ["dataset"], "rate", "n_detected", "n")))


# --------------------------------------------------------------------------- efficiency

def efficiency_report_table(efficiency: pd.DataFrame, detection: pd.DataFrame,
                            metric: str = "AUC") -> pd.DataFrame:
    """``efficiency.csv`` with each detector's clean ``metric`` per dataset appended
    ("AUC clean (dataset)")."""
    quality = clean_metric(detection, metric)
    wide = quality.pivot_table(index="detector", columns="dataset", values=metric,
                               aggfunc="first", sort=True)
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


def _efficiency_section(paths: Mapping, detection: pd.DataFrame) -> str:
    efficiency = _read(paths, "efficiency")
    return _section("efficiency", "Efficiency", caption_html("efficiency"),
                    _p(f"Measured on {measured_on(efficiency)}.", "note"),
                    table_html(efficiency_report_table(efficiency, detection)),
                    figure_html(paths["efficiency_figure"], "AUC against cost"),
                    caption_html("efficiency_figure"))


# --------------------------------------------------------------------------- forgeries

def _forgeries_section(paths: Mapping) -> str:
    manifests = [p for p in paths.get("forgeries", []) if Path(p).is_file()]
    success = forgery_success_table(manifests)
    parts = [caption_html("forgery_success"),
             table_html(rates_with_reasons(success, ["dataset", "method"], "success_rate",
                                           "made", "attempted")),
             "<h3>Examples</h3>", caption_html("forgery_examples")]
    sheets = []
    for path in paths.get("forgery_examples", []):
        dataset = Path(path).parent.name
        sheets.append(f"<figure>{figure_html(path, f'forgery examples of {dataset}')}"
                      f"<figcaption>{html.escape(dataset)}</figcaption></figure>")
    parts.append('<div class="sheets">' + "".join(sheets) + "</div>")
    return _section("forgeries", "Forgeries", *parts)


# --------------------------------------------------------------------------- exposure

def exposure_verdict(exposure: pd.DataFrame) -> list[str]:
    """Per encoder, the group most exposed as a false-positive suspect in each setting."""
    top = most_exposed_groups(exposure, "false_positive")
    lines = []
    for encoder, rows in top.groupby("encoder", sort=False):
        said = []
        for row in rows.itertuples(index=False):
            text = f"{row.group} in {row.setting} (exposure {_fmt(row.exposure)}"
            if row.runner_up:
                text += f"; next {row.runner_up} {_fmt(row.runner_up_exposure)}"
            said.append(text + ")")
        distance = rows["distance"].iloc[0]
        at = f" at distance {int(distance)}" if pd.notna(distance) else ""
        lines.append(f"Face ranking{at}, {encoder}: the group most exposed as a wrong suspect "
                     f"(largest false-positive exposure) is " + ", ".join(said) + ".")
    return lines


def _share(value: float) -> str:
    return f"{100 * value:.0f}%"


def _encoder_facts(table: pd.DataFrame, encoders: Mapping) -> list[str]:
    """How each encoder came to be (trained here or not) and how often it found no face."""
    facts = []
    for label, rows in table.groupby("encoder", sort=False):
        train = (encoders.get(label) or {}).get("train")
        if train is not None:
            seen = "far crops at the ranking distance" if train.get("far") else "close-range crops"
            facts.append(f"{label}: a {encoders[label].get('encoder', label)} encoder trained "
                         f"here on the train-split identities ({seen}, {train.get('head')} "
                         f"head, {train.get('epochs')} epochs); those identities are not ranked.")
        if "fallback_share_probes" in rows and rows["fallback_share_probes"].notna().any():
            first = rows.iloc[0]
            per_group = {c.removeprefix("fallback_probes_"): first[c]
                         for c in rows.columns if c.startswith("fallback_probes_")}
            gallery = rows.drop_duplicates("setting").set_index("setting")[
                "fallback_share_gallery"]
            facts.append(
                f"{label} found no face in {_share(first['fallback_share_probes'])} of the far "
                "probes (" + ", ".join(f"{g} {_share(v)}" for g, v in per_group.items())
                + ") and in " + ", ".join(f"{_share(v)} of the {s} gallery"
                                          for s, v in gallery.items())
                + "; it aligned those on a box calibrated on close-range crops. A group whose "
                "far faces are found less often is ranked on worse chips.")
    return facts


def _exposure_section(paths: Mapping, config: Mapping) -> str:
    table = _read(paths, "exposure_table")
    per_probe = _read(paths, "exposure_per_probe_group")
    ks = _read(paths, "exposure_ks")
    ranking = config.get("ranking", {})
    facts = []
    if not table.empty:
        first = table.iloc[0]
        dataset = ranking.get("dataset") or next(iter(config.get("datasets", {})), "")
        facts.append(f"Dataset {dataset}: {int(first['n_identities'])} identities with "
                     f"{int(first['l'])} images each, {int(first['n_probes'])} probes and "
                     f"{int(first['n_gallery_images'])} gallery images; probes seen at "
                     f"distance {int(first['distance'])}; the top k = {int(first['k'])} "
                     "positions of each ranking are counted.")
        facts += _encoder_facts(table, ranking.get("encoders", {}))
    ks_shown = ks.drop(columns=[c for c in ("distance", "k", "l") if c in ks.columns])
    if not ks.empty:
        n_small = int((ks["pvalue"] < ALPHA).sum())
        facts_ks = _p(f"{n_small} of {len(ks)} pairs differ at p < {ALPHA} (no correction "
                      "for the number of tests).", "note")
    else:
        facts_ks = ""
    return _section("exposure", "Ranking exposure at a distance", caption_html("exposure"),
                    *[_p(f, "note") for f in facts],
                    table_html(exposure_summary(table)) if not table.empty else
                    table_html(table),
                    figure_html(paths["exposure_figure"], "exposure per group and hit ratio"),
                    caption_html("exposure_figure"),
                    "<h3>Per probe group</h3>", caption_html("exposure_per_probe_group"),
                    table_html(exposure_matrix(per_probe) if not per_probe.empty else per_probe),
                    "<h3>Kolmogorov–Smirnov tests between groups</h3>",
                    caption_html("exposure_ks"), facts_ks, table_html(ks_shown))


STYLE = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table.t{border-collapse:collapse;font-size:.82em;margin:.5em 0}
table.t th,table.t td{padding:2px 8px;border-bottom:1px solid #e4e4e4;text-align:right}
table.t th{background:#f4f4f4}
.caption{color:#444;font-size:.92em} .note,.empty{color:#777;font-size:.9em}
.warn{background:#fff4d6;border-left:4px solid #e0a800;padding:.6em 1em}
.verdict{background:#eef6ee;border-left:4px solid #3a7d44;padding:.6em 1em}
img{max-width:100%} nav a{margin-right:1em}
.sheets{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
.sheets figure{margin:0} figcaption{text-align:center;font-weight:bold}
"""


def build_report(paths: Mapping, config: Mapping) -> str:
    """The report page of one run. ``paths``: :func:`report_inputs`; ``config``: the run's
    validated config (datasets, variants, metrics, ranking). The ranking-exposure section
    and its verdict line appear only when ``ranking.enabled``."""
    ur = config.get("metrics", {}).get("ur_denominator", "one_plus_acc")
    detection = _read(paths, "detection")
    fairness = _read(paths, "fairness")
    ci = _read(paths, "fairness_ci")
    pvalues = _read(paths, "pvalues")
    fup = _read(paths, "fairness_under_perturbation")
    robustness = _read(paths, "robustness")
    synthetic = any(d.get("adapter") == "synthetic" for d in config.get("datasets", {}).values())
    verdict_lines = verdict(fairness, ci, pvalues, fup, ur)
    ranking = ranking_enabled(config)
    if ranking:
        verdict_lines += exposure_verdict(_read(paths, "exposure_table"))
    links = [("verdict", "Verdict"), ("run", "Run"), ("detection", "Detection"),
             ("fairness", "Fairness"), ("robustness", "Robustness"),
             ("fairness-perturbed", "Fairness under degradations"), ("thresholds", "Thresholds"),
             ("grayscale", "Grayscale"), ("balanced", "Balanced training"),
             ("generalization", "Generalization"), ("efficiency", "Efficiency"),
             ("exposure", "Ranking exposure"), ("scores", "Scores"), ("forgeries", "Forgeries"),
             ("failures", "Failures"), ("glossary", "Glossary")]
    nav = ("<nav>" + "".join(f'<a href="#{a}">{t}</a>' for a, t in links
                             if ranking or a != "exposure") + "</nav>")
    body = [
        "<h1>fairforge: detection, robustness and fairness of face-forgery detectors</h1>",
        nav,
        _p(SYNTHETIC_NOTE, "warn") if synthetic else "",
        _section("verdict", "Verdict",
                 '<div class="verdict"><ul>' + "".join(f"<li>{html.escape(t)}</li>"
                                                      for t in verdict_lines) + "</ul></div>",
                 caption_html("verdict")),
        _run_section(config, paths, _read(paths, "detectors")),
        _detection_section(detection),
        _fairness_section(paths, fairness, ci, pvalues),
        _robustness_section(paths, robustness),
        _perturbed_fairness_section(paths, fup, ur),
        _thresholds_section(_read(paths, "thresholds")),
        _grayscale_section(_read(paths, "grayscale"), list(fup["variant"].unique())),
        _balanced_section(_read(paths, "balanced")),
        _generalization_section(_read(paths, "generalization")),
        _efficiency_section(paths, detection),
        _exposure_section(paths, config) if ranking else "",
        _section("scores", "Score distributions per group (FairFD Fig. 4)",
                 figure_html(paths["score_distributions"], "score distributions"),
                 caption_html("score_distributions")),
        _forgeries_section(paths),
        _failures_section(paths, _read(paths, "failures")),
        _section("glossary", "What the metrics mean", caption_html("glossary"),
                 _p(ur_convention(ur))),
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>fairforge report</title><style>" + STYLE + "</style></head><body>\n"
            + "\n".join(b for b in body if b) + "\n</body></html>\n")


def write_report(path: str | Path, paths: Mapping, config: Mapping) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(build_report(paths, config), encoding="utf-8")
    return path


