"""The self-contained HTML report: every table and figure of a run, with captions and a verdict.

:func:`build_report` reads the tables the workflow wrote (paths from
:func:`~fairforge.report.inputs.report_inputs`) and returns one HTML page: figures embedded
as base64 PNG, tables as HTML, no external file and no timestamp, so the same results give
the same bytes. Captions are the package's ``captions/*.rst`` (the same files
``snakemake --report`` shows).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

import fairforge.video  # noqa: F401  (the video adapters register when it is imported)
from fairforge.metrics.conventions import Conventions
from fairforge.perturb import CLEAN
from fairforge.report.inputs import caption_text, ranking_enabled, read_input
from fairforge.report.text import format_number, ur_convention
from fairforge.report.verdict import ALPHA, exposure_verdict, verdict
from fairforge.report.views import (
    backend_table,
    efficiency_report_table,
    encoder_facts,
    failure_summary,
    fairness_with_uncertainty,
    measured_on,
    paired_comparisons,
    per_group_accuracy,
    protocol_lines,
    protocol_tables,
    rates_with_reasons,
    side_by_side,
    undefined_metrics_lines,
    wide_pvalues,
)
from fairforge.sources import ADAPTERS
from fairforge.tables.detectors import TRAINED_ENOUGH_AUC, undertrained
from fairforge.tables.exposure import averaged_view, exposure_matrix, exposure_summary
from fairforge.tables.failures import group_dependent_failures
from fairforge.tables.fairness import dropped_resamples_note
from fairforge.tables.features import subject_rates_summary
from fairforge.tables.forgeries import (
    crop_outside_cells,
    face_detection_rates,
    forgery_success_table,
)
from fairforge.tables.forgery_quality import quality_verdicts, quality_view
from fairforge.tables.standing import MIN_FORGERY_SUCCESS
from fairforge.tables.variants import GRAYSCALE, sorted_variants, split_variants

SYNTHETIC_NOTE = (
    "The data is the synthetic default: groups are skin-tone bins of a synthetic "
    "renderer, not races. The numbers exercise the method; they say nothing "
    "about any detector's bias against real people."
)


def table_html(frame: pd.DataFrame, index: bool = False, max_rows: int = 400) -> str:
    if frame is None or frame.empty:
        return '<p class="empty">(empty)</p>'
    shown = frame.head(max_rows)
    out = shown.to_html(
        index=index,
        border=0,
        classes="t",
        na_rep="–",
        escape=True,
        float_format=format_number,
        justify="left",
    )
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
    """The caption ``name`` rendered to HTML by docutils."""
    from docutils.core import publish_parts
    from docutils.writers.html5_polyglot import Writer

    parts = publish_parts(
        caption_text(name), writer=Writer(), settings_overrides={"report_level": 5, "halt_level": 5}
    )
    return f'<div class="caption">{parts["body"]}</div>'


def _p(text: str, cls: str | None = None) -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<p{attr}>{html.escape(text)}</p>"


def _section(anchor: str, title: str, *parts: str) -> str:
    return (
        f'<section id="{anchor}"><h2>{html.escape(title)}</h2>\n' + "\n".join(parts) + "</section>"
    )


def _undertrained_line(detectors: pd.DataFrame, min_val_auc: float) -> str:
    """A warning naming the detectors whose validation AUC stayed under the bar."""
    names = undertrained(detectors)
    if not names:
        return ""
    return _p(
        f"Not trained enough to judge (best validation AUC under {min_val_auc:g}): "
        + ", ".join(names)
        + ". Their detection, robustness and fairness numbers describe a near-random "
        "classifier, not the architecture."
    )


def _run_section(config: Mapping, paths: Mapping, detectors: pd.DataFrame) -> str:
    m = config.get("metrics", {})
    conventions = Conventions.from_config(config)
    datasets = pd.DataFrame(
        [
            {
                "dataset": name,
                "adapter": d.get("adapter"),
                "groups from": ", ".join(d.get("group_by", []) or ["group"]),
            }
            for name, d in config.get("datasets", {}).items()
        ]
    )
    available, unavailable = split_variants(
        config.get("variants", [CLEAN]), config.get("variant_options")
    )
    unavailable_frame = pd.DataFrame(
        [{"variant": v, "reason": r} for v, r in unavailable.items()], columns=["variant", "reason"]
    )
    forgeries = [p for p in paths.get("forgeries", []) if Path(p).is_file()]
    parts = [
        caption_html("run"),
        "<h3>Datasets</h3>",
        table_html(datasets),
        "<h3>Detectors</h3>",
        table_html(detectors),
        _undertrained_line(detectors, m.get("min_val_auc", TRAINED_ENOUGH_AUC)),
        "<h3>Forgeries and the backend that made them</h3>",
        table_html(backend_table(forgeries)),
        "<h3>Test-time variants</h3>",
        _p("Evaluated: " + ", ".join(available) + "."),
        _p(
            "Unavailable (not evaluated, see why):"
            if unavailable
            else "Every configured variant was available."
        ),
        table_html(unavailable_frame) if unavailable else "",
        "<h3>Conventions</h3>",
        "<ul>"
        + "".join(
            f"<li>{html.escape(t)}</li>"
            for t in [
                f"Evaluation on the {m.get('evaluation_split', 'test')} split; the validation "
                "split only fits the per-group thresholds.",
                f"A sample is predicted fake when its score {conventions.threshold_rule} "
                f"{conventions.threshold}.",
                ur_convention(conventions.ur_denominator),
                f"Confidence intervals of the gaps: 95%, by test inversion over "
                f"{m.get('bootstrap', 0)} subject-level bootstrap resamples (subjects "
                "resampled within their group; docs/metrics.md section 4); a lower end of 0 "
                "means the data are consistent with no gap.",
                "p-values: one-sided subject-level permutation test (group labels shuffled "
                "across subjects): the chance of a gap at least this large if groups did not matter.",
            ]
        )
        + "</ul>",
    ]
    return _section("run", "What was run", *parts)


def _protocol_section(protocol: pd.DataFrame) -> str:
    """The protocol card: how each detector was trained and each dataset split, and where
    every value comes from."""
    tables = protocol_tables(protocol)
    lines = protocol_lines(protocol)
    flagged = [line for line in lines if line.startswith("Started from random weights")]
    return _section(
        "protocol",
        "How each detector was trained (the protocol card)",
        caption_html("protocol"),
        "".join(_p(line, "warn") for line in flagged),
        table_html(tables["detectors"]),
        "<h3>Where each value comes from</h3>",
        table_html(tables["sources"]),
        "<ul>" + "".join(f"<li>{html.escape(t)}</li>" for t in lines if t not in flagged) + "</ul>",
        "<h3>Datasets</h3>",
        table_html(tables["datasets"]),
    )


def _detection_section(detection: pd.DataFrame, paths: Mapping) -> str:
    parts = [caption_html("detection_table"), table_html(detection)]
    # Per forgery method (clean) and train-on x test-on method, where the run wrote them.
    if Path(paths.get("detection_per_method") or "").is_file():
        per_method = read_input(paths, "detection_per_method")
        if not per_method.empty:
            clean = per_method.loc[per_method["variant"] == "clean"]
            parts += [caption_html("detection_per_method"), table_html(clean)]
    if Path(paths.get("cross_manipulation") or "").is_file():
        cross = read_input(paths, "cross_manipulation")
        if not cross.empty:
            parts += [caption_html("cross_manipulation"), table_html(cross)]
    return _section("detection", "Detection quality", *parts)


def _fairness_section(paths: Mapping, fairness, ci, pvalues) -> str:
    per_group = read_input(paths, "fairness_per_group")
    standing = read_input(paths, "standing")
    undefined = undefined_metrics_lines(fairness)
    dropped = dropped_resamples_note(ci) if ci is not None else ""
    return _section(
        "fairness",
        "Fairness on clean test data",
        caption_html("fairness_table"),
        _p(
            "Cells read: value [95 % subject-bootstrap interval, by test inversion] "
            "p=permutation p-value (gaps only).",
            "note",
        ),
        *[_p("Undefined or partial: " + line, "warn") for line in undefined],
        _p(dropped, "warn" if "Warning" in dropped else "note") if dropped else "",
        table_html(fairness_with_uncertainty(fairness, ci, pvalues)),
        "<h3>Which detectors can be judged</h3>",
        caption_html("fairness_standing"),
        table_html(standing),
        "<h3>Accuracy per approach and group</h3>",
        caption_html("per_group"),
        table_html(per_group_accuracy(per_group)),
        "<h3>Permutation p-values</h3>",
        caption_html("fairness_pvalues"),
        table_html(wide_pvalues(pvalues)),
        "<h3>Paired comparisons of the detectors</h3>",
        _p(
            "Difference of two detectors' gaps (first − second) from paired subject-level "
            "resampling (the same subjects and resamples for both), its 95% basic bootstrap "
            "interval, "
            "the two-sided p-value and its Holm adjustment over every test of the verdict "
            "metrics.",
            "note",
        ),
        table_html(paired_comparisons(pvalues)),
    )


def _robustness_section(paths: Mapping, robustness: pd.DataFrame) -> str:
    variants = robustness.loc[robustness["scope"] == "variant"]
    wide = variants.pivot_table(
        index=["dataset", "detector"], columns="variant", values="AUC", aggfunc="first"
    )
    wide = wide.reindex(columns=sorted_variants(wide.columns))
    wide.columns.name = None
    summary = robustness.loc[robustness["scope"].isin(["category", "overall"])].pivot_table(
        index=["dataset", "detector"], columns="category", values="AUC", aggfunc="first"
    )
    summary.columns.name = None
    if "all" in summary.columns:
        summary = summary[["all"] + [c for c in summary.columns if c != "all"]]
        summary = summary.rename(columns={"all": "overall robustness score"})
    return _section(
        "robustness",
        "Robustness to real-world degradations",
        caption_html("robustness_table"),
        figure_html(paths["robustness_figure"], "AUC against severity"),
        caption_html("robustness_figure"),
        "<h3>AUC per variant</h3>",
        table_html(wide.reset_index()),
        "<h3>Mean AUC per operation category and overall</h3>",
        table_html(summary.reset_index()),
        *_study_parts(paths),
    )


def _study_parts(paths: Mapping) -> list[str]:
    """The papers' studies the run made (``fairforge.paths.REPORT_STUDIES``): training
    data against robustness, augmented twins, codecs by bitrate (Assessment); the
    random-intensity protocol with Table 4 and Figs. 3-6 (Benchmark)."""
    parts = []
    if "training_data_figure" in paths:
        parts += [
            "<h3>Training data and robustness (Assessment Fig. 4)</h3>",
            caption_html("training_data"),
            figure_html(paths["training_data_figure"], "category means per training set"),
        ]
    if "augmentation" in paths:
        table = read_input(paths, "augmentation")
        summary = table.loc[table["scope"] != "variant"] if "scope" in table else table
        parts += [
            "<h3>Augmented twins (Assessment Tables 4-6, Figs. 6-8)</h3>",
            caption_html("augmentation"),
            table_html(
                summary.drop(columns=["operation", "level", "severity", "variant"], errors="ignore")
            ),
            figure_html(paths["augmentation_figure"], "AUC against severity per augmentation"),
            figure_html(paths["cross_manipulation_figure"], "AUC per test method, SDAug twins"),
        ]
    if "compression_rate" in paths:
        parts += [
            "<h3>Codecs by bitrate (Assessment Fig. 5)</h3>",
            caption_html("compression_rate"),
            figure_html(paths["compression_rate_figure"], "AUC against bits per pixel"),
            table_html(read_input(paths, "compression_rate")),
        ]
    if "random_intensity" in paths:
        table = read_input(paths, "random_intensity")
        keep = [c for c in table.columns if not c.startswith(("param_", "drawn_", "n_drawn"))]
        parts += [
            "<h3>Perturbations at random intensity (Benchmark Fig. 3, section 4.3)</h3>",
            caption_html("random_intensity"),
            figure_html(paths["random_intensity_figure"], "AUC per perturbation type"),
            table_html(table[keep]),
            "<h3>Detection on the training set (Benchmark Table 4)</h3>",
            caption_html("in_domain_table"),
            table_html(read_input(paths, "in_domain")),
            "<h3>Average AUC against cost (Benchmark Figs. 4-6)</h3>",
            figure_html(paths["efficiency_average_figure"], "average AUC against cost"),
        ]
    return parts


def _perturbed_fairness_section(paths: Mapping, fup: pd.DataFrame, conventions: Conventions) -> str:
    keep = [
        "dataset",
        "detector",
        "variant",
        "AUC",
        "ACC",
        "AADPD",
        conventions.metric_name("URDEOdds"),
        "pooled_DEOdds",
        "pooled_AccGap",
    ]
    return _section(
        "fairness-perturbed",
        "Fairness under degradations",
        caption_html("fairness_under_perturbation"),
        figure_html(paths["fairness_heatmap"], "fairness heatmap"),
        caption_html("fairness_heatmap"),
        table_html(fup[[c for c in keep if c in fup.columns]]),
    )


def _thresholds_section(thresholds: pd.DataFrame) -> str:
    if "note" in thresholds.columns:
        body = _p(str(thresholds["note"].iloc[0]))
    else:
        fitted = thresholds.reindex(columns=["dataset", "fitted_on"]).dropna().drop_duplicates()
        body = "".join(
            _p(f"{dataset}: per-group thresholds fitted on {where}.", "note")
            for dataset, where in fitted.itertuples(index=False)
        ) + table_html(side_by_side(thresholds, "detector", ["global", "per_group"]))
    return _section(
        "thresholds",
        "Per-group thresholds (FairFD Table 5)",
        caption_html("thresholds_table"),
        body,
    )


def _grayscale_section(grayscale: pd.DataFrame, evaluated: Sequence[str]) -> str:
    if grayscale.empty:
        body = _p(
            f"Not evaluated: add {GRAYSCALE} to the variants to compare."
            if GRAYSCALE not in evaluated
            else "No detector has both clean and grayscale predictions."
        )
    else:
        body = table_html(side_by_side(grayscale, "detector", ["clean", "grayscale"]))
    return _section(
        "grayscale", "Grayscale test images (FairFD Table 6)", caption_html("grayscale_table"), body
    )


def _balanced_section(balanced: pd.DataFrame) -> str:
    if balanced.empty:
        body = _p(
            "No pair of detectors differs only in balanced training; configure a twin "
            "with `balanced: true` to compare."
        )
    else:
        body = table_html(
            side_by_side(balanced, ["detector", "balanced_detector"], ["standard", "balanced"])
        )
    return _section(
        "balanced",
        "Demographically balanced training (FairFD Table 4)",
        caption_html("balanced_table"),
        body,
    )


def _subjects_features_section(paths: Mapping) -> str:
    """FairFD A.6 and A.7, where the run drew them (metrics.subject_rates, .features)."""
    parts = []
    if "subject_rates" in paths:
        parts += [
            "<h3>Detection rates per subject (FairFD Fig. 5)</h3>",
            caption_html("subject_rates"),
            figure_html(paths["subject_rates_figure"], "TPR and TNR per subject"),
            table_html(subject_rates_summary(read_input(paths, "subject_rates"))),
        ]
    if "feature_mmd" in paths:
        parts += [
            "<h3>Feature space per group (FairFD Figs. 6 and 7)</h3>",
            caption_html("feature_analysis"),
            figure_html(paths["feature_tsne_figure"], "t-SNE of penultimate features"),
            figure_html(paths["feature_mmd_figure"], "MMD to the reference group"),
            table_html(read_input(paths, "feature_mmd")),
        ]
    if not parts:
        return ""
    return _section("subjects", "Subjects and feature space", *parts)


def _generalization_section(generalization: pd.DataFrame) -> str:
    if "note" in generalization.columns:
        body = _p(str(generalization["note"].iloc[0]))
    else:
        body = table_html(generalization)
    return _section(
        "generalization", "Cross-dataset generalization", caption_html("generalization"), body
    )


def _group_dependence_lines(failures: pd.DataFrame) -> list[str]:
    """The stages whose failure rate depends on group, or a note that none does."""
    if failures.empty or "p_holm" not in failures.columns:
        return []
    lines = group_dependent_failures(failures, ALPHA)
    if lines:
        return [_p(line, "warn") for line in lines]
    tested = failures.drop_duplicates(["dataset", "stage"])["p_holm"].notna().sum()
    return [
        _p(
            f"No stage's failure rate depends on group (Holm-adjusted p >= {ALPHA} in each "
            f"of the {tested} tests).",
            "note",
        )
    ]


def _failures_section(paths: Mapping, failures: pd.DataFrame) -> str:
    rates = face_detection_rates(paths.get("face_detection_rates", []))
    return _section(
        "failures",
        "Face-detection and forgery failures per group",
        caption_html("failures"),
        *_group_dependence_lines(failures),
        table_html(failure_summary(failures)),
        figure_html(paths["failures_figure"], "failure rates per group"),
        "<h3>Face detection rate per group</h3>",
        caption_html("face_detection_rate"),
        table_html(rates_with_reasons(rates, ["dataset"], "rate", "n_detected", "n")),
        "<h3>Share of the aligned crop outside the photo, per group</h3>",
        caption_html("crop_outside"),
        table_html(crop_outside_cells(rates)),
        *_face_backend_parts(paths),
        *_detection_under_perturbation(paths),
    )


def _face_backend_parts(paths: Mapping) -> list[str]:
    """The comparison of face detectors per group (config faces.compare_backends), per
    dataset: its figure and table."""
    tables = [Path(p) for p in paths.get("face_backend_tables", []) if Path(p).is_file()]
    if not tables:
        return []
    parts = ["<h3>Which face detector fails whom</h3>", caption_html("face_backends")]
    figures = {Path(p).parent.name: p for p in paths.get("face_backend_figures", [])}
    for path in tables:
        dataset = path.parent.name
        parts.append(f"<h4>{html.escape(dataset)}</h4>")
        if dataset in figures:
            parts.append(figure_html(figures[dataset], f"face backends per group ({dataset})"))
        parts.append(table_html(pd.read_csv(path).round(3)))
    return parts


def _detection_under_perturbation(paths: Mapping) -> list[str]:
    """Face detection on frames degraded by the frame-mode variants, when there are any."""
    tables = paths.get("face_detection_under_perturbation", [])
    if not tables:
        return []
    frame = pd.concat(
        [pd.read_csv(p).assign(dataset=Path(p).parent.name) for p in tables], ignore_index=True
    )
    shown = frame[["dataset", *[c for c in frame.columns if c != "dataset"]]]
    figures = paths.get("face_detection_under_perturbation_figures", [])
    return [
        "<h3>Face detection on degraded frames (frame-mode variants), per group</h3>",
        _p(
            "Share of the samples whose face, found on the clean frame, is found again "
            "after the operation degraded the whole frame; the rest are not scored."
        ),
        table_html(shown),
        *[figure_html(f, "face detection on degraded frames") for f in figures],
    ]


def _efficiency_section(paths: Mapping, detection: pd.DataFrame) -> str:
    efficiency = read_input(paths, "efficiency")
    return _section(
        "efficiency",
        "Efficiency",
        caption_html("efficiency"),
        _p(f"Measured on {measured_on(efficiency)}.", "note"),
        table_html(efficiency_report_table(efficiency, detection)),
        figure_html(paths["efficiency_figure"], "AUC against cost"),
        caption_html("efficiency_figure"),
    )


# --------------------------------------------------------------------------- forgeries


def _forgeries_section(paths: Mapping) -> str:
    manifests = [p for p in paths.get("forgeries", []) if Path(p).is_file()]
    success = forgery_success_table(manifests)
    parts = [
        caption_html("forgery_success"),
        table_html(
            rates_with_reasons(success, ["dataset", "method"], "success_rate", "made", "attempted")
        ),
        "<h3>Examples</h3>",
        caption_html("forgery_examples"),
    ]
    sheets = []
    for path in paths.get("forgery_examples", []):
        dataset = Path(path).parent.name
        sheets.append(
            f"<figure>{figure_html(path, f'forgery examples of {dataset}')}"
            f"<figcaption>{html.escape(dataset)}</figcaption></figure>"
        )
    parts.append('<div class="sheets">' + "".join(sheets) + "</div>")
    parts += _quality_parts(paths)
    return _section("forgeries", "Forgeries", *parts)


def _quality_parts(paths: Mapping) -> list[str]:
    """The forgery quality card: per method and group, equal quality or which measures
    differ; the card itself; one figure per method."""
    if "forgery_quality" not in paths:
        return []
    card = read_input(paths, "forgery_quality")
    parts = [
        "<h3>Forgery quality per group</h3>",
        caption_html("forgery_quality"),
        table_html(quality_verdicts(card)),
        table_html(quality_view(card)),
    ]
    for path in paths.get("forgery_quality_figures", []):
        method = Path(path).stem
        parts.append(
            f"<figure>{figure_html(path, f'forgery quality of {method}')}"
            f"<figcaption>{html.escape(method)}</figcaption></figure>"
        )
    return parts


def _exposure_facts(table: pd.DataFrame, ranking: Mapping, config: Mapping) -> list[str]:
    """Per ranked dataset: its identities, images and probes, and the distances ranked."""
    facts = []
    datasets = ranking.get("datasets") or [
        ranking.get("dataset") or next(iter(config.get("datasets", {})), "")
    ]
    by_dataset = (
        table.groupby("dataset", sort=False)
        if "dataset" in table.columns
        else [(datasets[0], table)]
    )
    for dataset, rows in by_dataset:
        first = rows.iloc[0]
        distances = ", ".join(str(d) for d in dict.fromkeys(rows["distance"]))
        facts.append(
            f"Dataset {dataset}: {int(first['n_identities'])} identities with "
            f"{int(first['l'])} images each, {int(first['n_probes'])} probes and "
            f"{int(first['n_gallery_images'])} gallery images; probes seen at "
            f"distance {distances}; the top k = {int(first['k'])} "
            "positions of each ranking are counted."
        )
    return facts


def _exposure_section(paths: Mapping, config: Mapping) -> str:
    table = read_input(paths, "exposure_table")
    per_probe = read_input(paths, "exposure_per_probe_group")
    ks = read_input(paths, "exposure_ks")
    averaged_ks = read_input(paths, "exposure_averaged_ks")
    ranking = config.get("ranking", {})
    facts = []
    if not table.empty:
        facts += _exposure_facts(table, ranking, config)
        facts += encoder_facts(table, ranking.get("encoders", {}), ranking.get("train_dataset"))
    # the distance is said above unless several were ranked
    shown = ("k", "l", "distance") if ks.get("distance", pd.Series()).nunique() <= 1 else ("k", "l")
    ks_shown = ks.drop(columns=[c for c in shown if c in ks.columns])
    if not ks.empty:
        if "pvalue_holm" in ks.columns:
            said = (
                f"{int((ks['pvalue_holm'] < ALPHA).sum())} of {len(ks)} tests differ at "
                f"p < {ALPHA} after Holm's adjustment (one family per encoder, setting and "
                "convention: every pair of groups, on visibility and on exposure)."
            )
        else:  # a table written before the adjustment existed
            said = (
                f"{int((ks['pvalue'] < ALPHA).sum())} of {len(ks)} tests differ at "
                f"p < {ALPHA} (no correction for the number of tests)."
            )
        facts_ks = _p(said, "note")
    else:
        facts_ks = ""
    return _section(
        "exposure",
        "Ranking exposure at a distance",
        caption_html("exposure"),
        *[_p(f, "note") for f in facts],
        table_html(exposure_summary(table)) if not table.empty else table_html(table),
        figure_html(paths["exposure_figure"], "exposure per group and hit ratio"),
        caption_html("exposure_figure"),
        "<h3>Per probe group</h3>",
        caption_html("exposure_per_probe_group"),
        table_html(exposure_matrix(per_probe) if not per_probe.empty else per_probe),
        "<h3>Kolmogorov–Smirnov tests between groups</h3>",
        caption_html("exposure_ks"),
        facts_ks,
        table_html(ks_shown),
        "<h3>Exposure averaged across encoders (Exposure Fig. 2)</h3>",
        caption_html("exposure_averaged_ks"),
        table_html(averaged_view(averaged_ks) if not averaged_ks.empty else averaged_ks),
        figure_html(paths["exposure_averaged_figure"], "exposure averaged across encoders"),
        caption_html("exposure_averaged_figure"),
    )


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
    conventions = Conventions.from_config(config)
    detection = read_input(paths, "detection")
    fairness = read_input(paths, "fairness")
    ci = read_input(paths, "fairness_ci")
    pvalues = read_input(paths, "pvalues")
    fup = read_input(paths, "fairness_under_perturbation")
    robustness = read_input(paths, "robustness")
    synthetic = any(
        ADAPTERS.create(d["adapter"]).synthetic
        for d in config.get("datasets", {}).values()
        if "adapter" in d
    )
    verdict_lines = verdict(
        fairness,
        ci,
        pvalues,
        fup,
        conventions,
        standing=read_input(paths, "standing"),
        failures=read_input(paths, "failures"),
        min_forgery_success=config.get("metrics", {}).get(
            "min_forgery_success", MIN_FORGERY_SUCCESS
        ),
    )
    ranking = ranking_enabled(config)
    analyses = "subject_rates" in paths or "feature_mmd" in paths
    if ranking:
        verdict_lines += exposure_verdict(read_input(paths, "exposure_table"))
    links = [
        ("verdict", "Verdict"),
        ("run", "Run"),
        ("protocol", "Protocol"),
        ("detection", "Detection"),
        ("fairness", "Fairness"),
        ("robustness", "Robustness"),
        ("fairness-perturbed", "Fairness under degradations"),
        ("thresholds", "Thresholds"),
        ("grayscale", "Grayscale"),
        ("balanced", "Balanced training"),
        ("subjects", "Subjects and features"),
        ("generalization", "Generalization"),
        ("efficiency", "Efficiency"),
        ("exposure", "Ranking exposure"),
        ("scores", "Scores"),
        ("forgeries", "Forgeries"),
        ("failures", "Failures"),
        ("glossary", "Glossary"),
    ]
    nav = (
        "<nav>"
        + "".join(
            f'<a href="#{a}">{t}</a>'
            for a, t in links
            if (ranking or a != "exposure") and (a != "subjects" or analyses)
        )
        + "</nav>"
    )
    body = [
        "<h1>fairforge: detection, robustness and fairness of face-forgery detectors</h1>",
        nav,
        _p(SYNTHETIC_NOTE, "warn") if synthetic else "",
        _section(
            "verdict",
            "Verdict",
            '<div class="verdict"><ul>'
            + "".join(f"<li>{html.escape(t)}</li>" for t in verdict_lines)
            + "</ul></div>",
            caption_html("verdict"),
        ),
        _run_section(config, paths, read_input(paths, "detectors")),
        _protocol_section(read_input(paths, "protocol")),
        _detection_section(detection, paths),
        _fairness_section(paths, fairness, ci, pvalues),
        _robustness_section(paths, robustness),
        _perturbed_fairness_section(paths, fup, conventions),
        _thresholds_section(read_input(paths, "thresholds")),
        _grayscale_section(read_input(paths, "grayscale"), list(fup["variant"].unique())),
        _balanced_section(read_input(paths, "balanced")),
        _subjects_features_section(paths),
        _generalization_section(read_input(paths, "generalization")),
        _efficiency_section(paths, detection),
        _exposure_section(paths, config) if ranking else "",
        _section(
            "scores",
            "Score distributions per group (FairFD Fig. 4)",
            figure_html(paths["score_distributions"], "score distributions"),
            caption_html("score_distributions"),
        ),
        _forgeries_section(paths),
        _failures_section(paths, read_input(paths, "failures")),
        _section(
            "glossary",
            "What the metrics mean",
            caption_html("glossary"),
            _p(ur_convention(conventions.ur_denominator)),
        ),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>fairforge report</title><style>"
        + STYLE
        + "</style></head><body>\n"
        + "\n".join(b for b in body if b)
        + "\n</body></html>\n"
    )


def write_report(path: str | Path, paths: Mapping, config: Mapping) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(build_report(paths, config), encoding="utf-8")
    return path
