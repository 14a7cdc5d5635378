"""Figures of the report, drawn from the analysis tables with matplotlib's object API.

Figures are built with :class:`matplotlib.figure.Figure` (no pyplot state, Agg canvas) and
saved by :func:`fairforge.plotting.save_png`, so the same tables give the same bytes. Every
function takes a table and an output path and returns the path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from fairforge.forgery.quality import CARD_MEASURES
from fairforge.perturb import CLEAN
from fairforge.plotting import save_png
from fairforge.tables.efficiency import (
    EFFICIENCY_AXES,
    efficiency_with_metric,
    family_efficiency,
)
from fairforge.tables.forgery_quality import ALPHA as QUALITY_ALPHA
from fairforge.tables.predictions import evaluation_rows
from fairforge.tables.robustness import MEAN_ALL, MEAN_COMMON, SPREAD
from fairforge.tables.variants import sorted_variants

PANEL = (4.0, 3.0)  # inches per panel


def _colours(names: Sequence[str]) -> dict[str, tuple]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {n: cmap(i % 10) for i, n in enumerate(names)}


def _grid(n_rows: int, n_cols: int, width: float = PANEL[0], height: float = PANEL[1]):
    fig = Figure(figsize=(width * n_cols, height * n_rows + 0.6), layout="constrained")
    axes = np.atleast_2d(fig.subplots(n_rows, n_cols, squeeze=False))
    return fig, axes


def _message(path: str | Path, text: str) -> Path:
    """A small figure that says why there is nothing to draw (the report still shows it)."""
    fig = Figure(figsize=(5, 1.2))
    fig.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    return save_png(fig, path)


# --------------------------------------------------------------------------- robustness


def robustness_figure(
    robustness: pd.DataFrame,
    path: str | Path,
    twins: Sequence[tuple[str, str]] = (),
    metric: str = "AUC",
) -> Path:
    """AUC against severity, one panel per operation (rows: datasets), one line per detector.

    Severity 0 is ``clean``. A detector's SDAug-trained twin (``twins``: (base, twin) pairs)
    is drawn dashed in its base's colour, so each pair reads side by side.
    """
    rows = robustness.loc[robustness["scope"] == "variant"]
    ops = sorted(set(rows["operation"]) - {CLEAN})
    if not ops:
        return _message(path, "Only clean predictions were evaluated: no severity curve.")
    datasets = sorted(rows["dataset"].unique())
    twin_of = {t: b for b, t in twins}
    detectors = sorted(rows["detector"].unique())
    colours = _colours([d for d in detectors if d not in twin_of])
    fig, axes = _grid(len(datasets), len(ops))
    for r, dataset in enumerate(datasets):
        data = rows.loc[rows["dataset"] == dataset]
        clean = data.loc[data["variant"] == CLEAN].set_index("detector")[metric]
        for c, op in enumerate(ops):
            ax = axes[r, c]
            part = data.loc[data["operation"] == op].sort_values("severity")
            levels = part.drop_duplicates("severity")[["severity", "level"]]
            for detector in detectors:
                line = part.loc[part["detector"] == detector]
                if line.empty:
                    continue
                x = np.r_[0, line["severity"].to_numpy(float)]
                y = np.r_[clean.get(detector, np.nan), line[metric].to_numpy(float)]
                base = twin_of.get(detector, detector)
                ax.plot(
                    x,
                    y,
                    marker="o",
                    ms=3,
                    color=colours.get(base, "k"),
                    linestyle="--" if detector in twin_of else "-",
                    label=f"{detector} (SDAug twin of {base})" if detector in twin_of else detector,
                )
            ax.set_xticks(
                np.r_[0, levels["severity"].to_numpy(float)],
                ["clean", *[f"{lv:g}" for lv in levels["level"]]],
            )
            ax.set_title(f"{op} ({dataset})" if len(datasets) > 1 else op, fontsize=10)
            ax.set_xlabel("level (mildest to strongest)")
            ax.set_ylabel(metric)
            ax.axhline(0.5, color="0.7", lw=0.8, zorder=0)
            ax.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(4, len(labels)), fontsize=8)
    return save_png(fig, path)


def random_intensity_figure(table: pd.DataFrame, path: str | Path, metric: str = "AUC") -> Path:
    """The Benchmark paper's Fig. 3: ``metric`` under each perturbation type at random
    intensity, beside clean, one panel per test dataset and one line per architecture: its
    mean over the training sets (solid) and over the commonly trained ones (dashed), or the
    detector itself where it has one training set; the legend gives each line's population
    standard deviation over the perturbations (§4.3). ``table`` is
    :func:`~fairforge.tables.robustness.random_intensity_table`."""
    if table.empty:
        return _message(path, "No op@random variant was evaluated: no perturbation curve.")
    spread = table["operation"] == SPREAD
    ops = list(dict.fromkeys(table.loc[~spread, "operation"]))
    means = table["train_dataset"].isin([MEAN_ALL, MEAN_COMMON])
    averaged = set(table.loc[means, "arch"])
    lines = table.loc[means | ~table["arch"].isin(averaged)]
    datasets = sorted(lines["dataset"].astype(str).unique())
    names = sorted(lines["detector"].astype(str).unique())
    colours = _colours(names)
    fig, axes = _wrap(len(datasets), 3, max(PANEL[0], 0.7 * len(ops) + 2.0))
    x = np.arange(len(ops) + 1)
    for ax, dataset in zip(axes, datasets):
        data = lines.loc[lines["dataset"].astype(str) == dataset]
        keys = ["detector", "train_dataset"]
        for (detector, trained), line in data.groupby(keys, sort=True):
            values = line.loc[~spread.loc[line.index]].set_index("operation")
            std = line.loc[spread.loc[line.index], metric]
            y = [values[f"clean_{metric}"].mean(), *[values[metric].get(op, np.nan) for op in ops]]
            label = detector if trained != MEAN_COMMON else f"{detector}, common"
            if len(std):
                label += f" (std {float(std.iloc[0]):.3f})"
            ax.plot(
                x,
                y,
                marker="o",
                ms=3,
                color=colours[detector],
                linestyle="--" if trained == MEAN_COMMON else "-",
                label=label,
            )
        ax.set_xticks(x, ["clean", *ops], rotation=40, ha="right", fontsize=8)
        ax.set_ylabel(f"average {metric}" if averaged else metric)
        ax.set_title(dataset, fontsize=10)
        ax.axhline(0.5, color="0.7", lw=0.8, zorder=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    return save_png(fig, path)


def _first(frame: pd.DataFrame, dataset: str | None) -> tuple[str, pd.DataFrame]:
    """``dataset`` (default: the first in the table) and its rows."""
    name = dataset if dataset is not None else sorted(frame["dataset"].astype(str).unique())[0]
    return name, frame.loc[frame["dataset"].astype(str) == name]


def _wrap(n: int, per_row: int, width: float = PANEL[0], height: float = PANEL[1]):
    """A grid of ``n`` panels, ``per_row`` to a row; the unused panels hidden."""
    cols = max(1, min(per_row, n))
    rows = max(1, -(-n // cols))
    fig, axes = _grid(rows, cols, width, height)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def compression_rate_figure(
    rates: pd.DataFrame, path: str | Path, dataset: str | None = None, metric: str = "AUC"
) -> Path:
    """The Assessment's Fig. 5: ``metric`` against bits per pixel, one line per codec (JPEG,
    the learned compression), one panel per detector, on ``dataset`` (default: the first);
    the clean value dotted. ``rates`` is :func:`~fairforge.tables.robustness.
    compression_rate_table`."""
    if rates.empty:
        return _message(path, "No codec variant was evaluated: no rate curve.")
    dataset, data = _first(rates, dataset)
    detectors = sorted(data["detector"].unique())
    codecs = sorted(data["operation"].unique())
    colours = _colours(codecs)
    fig, axes = _wrap(len(detectors), 4)
    for ax, detector in zip(axes, detectors):
        part = data.loc[data["detector"] == detector]
        for codec in codecs:
            line = part.loc[part["operation"] == codec].sort_values("bpp")
            ax.plot(line["bpp"], line[metric], marker="o", ms=3, color=colours[codec], label=codec)
        clean = part[f"clean_{metric}"].dropna()
        if len(clean):
            ax.axhline(float(clean.iloc[0]), color="k", ls=":", lw=1, label="clean")
        ax.axhline(0.5, color="0.7", lw=0.8, zorder=0)
        ax.set_title(f"{detector} ({dataset})", fontsize=10)
        ax.set_xlabel("bits per pixel")
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)
    return save_png(fig, path)


#: The operations of the Assessment's Figs. 6-7 (noise, blur, learned compression, low
#: resolution, a mixed distortion), drawn by :func:`augmentation_figure` where evaluated.
AUGMENTATION_PANELS = (
    "gaussian_noise",
    "gaussian_blur",
    "learned_compression",
    "resize",
    "resize+noise+jpeg",
)


def augmentation_figure(
    table: pd.DataFrame,
    path: str | Path,
    dataset: str | None = None,
    operations: Sequence[str] | None = None,
    metric: str = "AUC",
) -> Path:
    """The Assessment's Figs. 6-7: ``metric`` against severity, the detector trained without
    augmentation (solid black) and each augmented twin; one row of panels per detector, one
    panel per operation (``operations``; default those of :data:`AUGMENTATION_PANELS` that
    were evaluated, else every one), on ``dataset``
    (default: the first). ``table`` is :func:`~fairforge.tables.robustness.
    augmentation_table`."""
    if table.empty:
        return _message(path, "No detector has an augmented twin to compare with.")
    dataset, data = _first(table, dataset)
    data = data.loc[data["scope"] == "variant"]
    present = sorted(set(data["operation"].astype(str)) - {CLEAN, ""})
    ops = [o for o in (operations or AUGMENTATION_PANELS) if o in present] or present
    bases = sorted(data["detector"].unique())
    augments = sorted(data["augment"].unique())
    colours = _colours(augments)
    fig, axes = _grid(len(bases), len(ops), 3.2, 2.6)
    for r, base in enumerate(bases):
        rows = data.loc[data["detector"] == base]
        clean = rows.loc[rows["variant"] == CLEAN]
        for c, op in enumerate(ops):
            ax = axes[r, c]
            part = rows.loc[rows["operation"] == op].sort_values("severity")
            first = part.drop_duplicates("severity")
            x = np.r_[0, first["severity"].to_numpy(float)]
            base_clean = float(clean["baseline"].iloc[0]) if len(clean) else np.nan
            ax.plot(x, np.r_[base_clean, first["baseline"].to_numpy(float)], "k-o", ms=3,
                    label="no augmentation")  # fmt: skip
            for augment in augments:
                line = part.loc[part["augment"] == augment]
                if line.empty:
                    continue
                twin_clean = clean.loc[clean["augment"] == augment, "augmented"]
                y0 = float(twin_clean.iloc[0]) if len(twin_clean) else np.nan
                ax.plot(
                    np.r_[0, line["severity"].to_numpy(float)],
                    np.r_[y0, line["augmented"].to_numpy(float)],
                    marker="o",
                    ms=3,
                    color=colours[augment],
                    label=augment,
                )
            ax.set_xticks(x, ["clean", *[f"{lv:g}" for lv in first["level"]]])
            ax.set_title(f"{base}: {op}", fontsize=9)
            ax.set_ylabel(metric)
            ax.axhline(0.5, color="0.7", lw=0.8, zorder=0)
            ax.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)
    return save_png(fig, path)


def cross_manipulation_figure(
    cross: pd.DataFrame,
    twins: Sequence[tuple[str, str]],
    path: str | Path,
    dataset: str | None = None,
    twin_label: str = "SDAug",
) -> Path:
    """The Assessment's Fig. 8: for each detector with a twin (``twins``: (base, twin)
    pairs, e.g. its SDAug twin), its clean AUC on every test method beside its twin's, one
    panel per detector, titled with the methods it trained on; on ``dataset`` (default: the
    first). ``cross`` is ``cross_manipulation.csv``."""
    if cross.empty:
        return _message(path, "No per-method AUC was measured.")
    dataset, data = _first(cross, dataset)
    by_detector = data.set_index("detector")
    pairs = [(b, t) for b, t in twins if b in by_detector.index and t in by_detector.index]
    if not pairs:
        return _message(path, f"No detector has a {twin_label} twin on {dataset}.")
    meta = {"dataset", "detector", "trained_on"}
    methods = [c for c in data.columns if c not in meta]
    fig, axes = _wrap(len(pairs), 4, max(PANEL[0], 0.7 * len(methods) + 1.5))
    x = np.arange(len(methods))
    for ax, (base, twin) in zip(axes, pairs):
        for k, (name, label) in enumerate(((base, "baseline"), (twin, twin_label))):
            values = by_detector.loc[name, methods].to_numpy(float)
            ax.bar(x + (k - 0.5) * 0.4, values, 0.4, label=label, color=f"C{k}")
        ax.set_xticks(x, methods, rotation=40, ha="right", fontsize=8)
        ax.set_ylim(0, 1)
        ax.axhline(0.5, color="0.7", lw=0.8, zorder=0)
        ax.set_title(f"{base}: trained on {by_detector.loc[base, 'trained_on']}", fontsize=9)
        ax.set_ylabel("AUC")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize=8)
    return save_png(fig, path)


def training_data_figure(
    robustness: pd.DataFrame,
    families: Sequence[Sequence[str]],
    path: str | Path,
    dataset: str | None = None,
    metric: str = "AUC",
) -> Path:
    """The Assessment's Fig. 4: per family of detectors that differ only in their training
    data (``families``, e.g. trained on FF++ raw, c23 or all qualities), ``metric`` on clean
    data, per operation category and overall, one bar per member; on ``dataset`` (default:
    the first). ``robustness`` is :func:`~fairforge.tables.robustness.robustness_table`."""
    families = [f for f in families if len(f) > 1]
    if robustness.empty or not families:
        return _message(path, "No detectors differ only in their training data.")
    dataset, data = _first(robustness, dataset)
    clean = data.loc[data["variant"] == CLEAN].set_index("detector")[metric]
    summary = data.loc[data["scope"].isin(["category", "overall"])]
    categories = sorted(set(summary.loc[summary["scope"] == "category", "category"]))
    overall = [c for c in summary.loc[summary["scope"] == "overall", "category"].unique()]
    columns = ["clean", *categories, *[f"overall: {c}" for c in overall]]
    width = max(PANEL[0], 0.45 * len(columns) + 2.0)
    fig, axes = _wrap(len(families), 2, width)
    x = np.arange(len(columns))
    for ax, members in zip(axes, families):
        step = 0.8 / len(members)
        for k, member in enumerate(members):
            part = summary.loc[summary["detector"] == member]
            values = dict(zip(part["category"], part[metric]))
            y = [clean.get(member, np.nan)]
            y += [values.get(c, np.nan) for c in categories]
            y += [values.get(c, np.nan) for c in overall]
            ax.bar(x - 0.4 + step * (k + 0.5), y, step, label=member, color=f"C{k % 10}")
        ax.set_xticks(x, columns, rotation=50, ha="right", fontsize=8)
        ax.set_ylim(0, 1)
        ax.axhline(0.5, color="0.7", lw=0.8, zorder=0)
        ax.set_ylabel(metric)
        ax.set_title(f"{members[0]} and its training sets ({dataset})", fontsize=9)
        ax.legend(fontsize=7)
    return save_png(fig, path)


# --------------------------------------------------------------------------- fairness


def default_heatmap_metrics(ur_denominator: str) -> list[str]:
    return ["AUC", "AADPD", f"URDEOdds_{ur_denominator}", "pooled_DEOdds"]


def fairness_heatmap(fup: pd.DataFrame, path: str | Path, metrics: Sequence[str]) -> Path:
    """Detectors x variants heatmaps, one panel per metric (rows: datasets).

    Fairness gaps use one colour scale per panel, from 0 (white) to the panel's largest gap;
    AUC uses 0.5 (white, chance) to 1.
    """
    metrics = [m for m in metrics if m in fup.columns]
    datasets = sorted(fup["dataset"].unique())
    variants = sorted_variants(fup["variant"].unique())
    detectors = sorted(fup["detector"].unique())
    width = max(PANEL[0], 0.55 * len(variants) + 2.0)
    height = max(2.0, 0.45 * len(detectors) + 1.6)
    fig, axes = _grid(len(datasets), len(metrics), width, height)
    for r, dataset in enumerate(datasets):
        data = fup.loc[fup["dataset"] == dataset]
        for c, metric in enumerate(metrics):
            ax = axes[r, c]
            grid = (
                data.pivot_table(
                    index="detector",
                    columns="variant",
                    values=metric,
                    aggfunc="first",
                    dropna=False,
                )
                .reindex(index=detectors, columns=variants)
                .to_numpy(float)
            )
            if metric == "AUC":
                vmin, vmax, cmap = 0.5, 1.0, "Greens"
            else:
                top = np.nanmax(grid) if np.isfinite(grid).any() else 0.0
                vmin, vmax, cmap = 0.0, top if top > 0 else 1.0, "Reds"
            image = ax.imshow(grid, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
            for (i, j), value in np.ndenumerate(grid):
                if np.isfinite(value) and grid.size <= 400:
                    dark = (value - vmin) / (vmax - vmin) > 0.6
                    ax.text(
                        j,
                        i,
                        f"{value:.2f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white" if dark else "black",
                    )
            ax.set_xticks(range(len(variants)), variants, rotation=60, ha="right", fontsize=8)
            ax.set_yticks(range(len(detectors)), detectors, fontsize=8)
            ax.set_title(f"{metric} ({dataset})" if len(datasets) > 1 else metric, fontsize=10)
            fig.colorbar(image, ax=ax, shrink=0.8)
    return save_png(fig, path)


def score_distributions(
    preds: pd.DataFrame,
    path: str | Path,
    split: str | None = "test",
    variant: str = CLEAN,
    threshold: float = 0.5,
    bins: int = 20,
) -> Path:
    """Score histograms per group (FairFD Fig. 4): one panel per detector (rows: datasets);
    real samples solid, fakes dashed, one colour per group; the decision threshold dotted."""
    data = evaluation_rows(preds, split)
    if "variant" in data.columns:
        data = data.loc[data["variant"] == variant]
    if data.empty:
        return _message(path, f"No {split} predictions under {variant}.")
    datasets = sorted(data["dataset"].unique())
    detectors = sorted(data["detector"].unique())
    groups = sorted(data["group"].astype(str).unique())
    colours = _colours(groups)
    edges = np.linspace(0.0, 1.0, bins + 1)
    fig, axes = _grid(len(datasets), len(detectors))
    for r, dataset in enumerate(datasets):
        for c, detector in enumerate(detectors):
            ax = axes[r, c]
            part = data.loc[(data["dataset"] == dataset) & (data["detector"] == detector)]
            for group in groups:
                for label, style, kind in ((0, "-", "real"), (1, "--", "fake")):
                    scores = part.loc[
                        (part["group"].astype(str) == group) & (part["label"] == label), "score"
                    ].to_numpy(float)
                    if scores.size == 0:
                        continue
                    density, _ = np.histogram(np.clip(scores, 0, 1), bins=edges, density=True)
                    ax.stairs(
                        density,
                        edges,
                        color=colours[group],
                        linestyle=style,
                        label=f"{group} {kind}",
                    )
            ax.axvline(threshold, color="0.4", linestyle=":", lw=1)
            ax.set_xlim(0, 1)
            ax.set_xlabel("score (probability of fake)")
            ax.set_ylabel("density")
            ax.set_title(f"{detector} ({dataset})" if len(datasets) > 1 else detector, fontsize=10)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="outside lower center", ncol=min(4, max(1, len(labels))), fontsize=8
    )
    return save_png(fig, path)


def failure_figure(failures: pd.DataFrame, path: str | Path) -> Path:
    """Failure rate per stage (face detection, each forgery method) and group (rows: datasets)."""
    if failures.empty:
        return _message(path, "No failure counts.")
    frame = failures.assign(dataset=failures["dataset"] if "dataset" in failures else "data")
    frame = frame.loc[frame["stage"] != "sources"] if (frame["stage"] != "sources").any() else frame
    datasets = sorted(frame["dataset"].unique())
    groups = sorted(frame["group"].astype(str).unique())
    colours = _colours(groups)
    stages = list(dict.fromkeys(frame["stage"]))
    fig, axes = _grid(len(datasets), 1, max(PANEL[0], 1.2 * len(stages) + 2), PANEL[1])
    width = 0.8 / max(1, len(groups))
    for r, dataset in enumerate(datasets):
        ax = axes[r, 0]
        data = frame.loc[frame["dataset"] == dataset]
        rates = data.pivot_table(
            index="stage", columns="group", values="failure_rate", aggfunc="first"
        ).reindex(index=stages, columns=groups)
        x = np.arange(len(stages))
        for k, group in enumerate(groups):
            ax.bar(
                x + (k - (len(groups) - 1) / 2) * width,
                rates[group].to_numpy(float),
                width,
                color=colours[group],
                label=group,
            )
        ax.set_xticks(x, [s.replace("forgery:", "forgery\n") for s in stages], fontsize=8)
        ax.set_ylabel("failure rate")
        ax.set_title(f"failures per group ({dataset})", fontsize=10)
        ax.set_ylim(0, max(0.05, float(np.nanmax(rates.to_numpy(float), initial=0)) * 1.2))
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    return save_png(fig, path)


# --------------------------------------------------------------------------- efficiency

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def efficiency_figure(
    efficiency: pd.DataFrame,
    detection: pd.DataFrame,
    path: str | Path,
    metric: str = "AUC",
    variant: str = CLEAN,
    axes: Sequence[str] = tuple(EFFICIENCY_AXES),
    families: Mapping[str, Mapping] | None = None,
) -> Path:
    """``metric`` on ``variant`` against each cost of ``axes`` (Benchmark paper's efficiency
    plots): one panel per cost, one point per detector and dataset, labelled with the
    detector, one colour per detector and one marker per dataset. With ``families`` (each
    detector's settings), one point per family of detectors that differ only in their
    training set, at its average over them and the datasets
    (:func:`~fairforge.tables.efficiency.family_efficiency`: the paper's Figs. 4-6). Costs
    spanning more than a factor of 10 are drawn on a log axis. Detectors without a timed
    network (classical ones) are named under the panels, not drawn."""
    if families is None:
        frame = efficiency_with_metric(efficiency, detection, metric, variant)
    else:
        frame = family_efficiency(efficiency, detection, families, metric, variant)
    axes = [a for a in axes if a in frame.columns]
    if frame.empty or not axes:
        return _message(path, "No detector has both a cost row and a clean " + metric + ".")
    costed = frame.dropna(subset=axes, how="all")
    untimed = sorted(set(frame["detector"]) - set(costed["detector"]))
    if costed.empty:
        return _message(path, "No detector has a timed network (classical detectors only).")
    detectors = sorted(costed["detector"].unique())
    datasets = sorted(costed["dataset"].unique())
    colours = _colours(detectors)
    markers = {d: MARKERS[i % len(MARKERS)] for i, d in enumerate(datasets)}
    fig, grid = _grid(1, len(axes))
    for ax, cost in zip(grid[0], axes):
        data = costed.dropna(subset=[cost, metric])
        for row in data.itertuples(index=False):
            x, y = float(getattr(row, cost)), float(getattr(row, metric))
            ax.scatter(
                [x], [y], color=colours[row.detector], marker=markers[row.dataset], s=36, zorder=3
            )
            ax.annotate(row.detector, (x, y), xytext=(4, 4), textcoords="offset points", fontsize=7)
        values = data[cost].to_numpy(float)
        if len(values) and values.min() > 0 and values.max() / values.min() > 10:
            ax.set_xscale("log")
        if len(values):
            # room for the labels right of the points
            low, high = values.min(), values.max()
            if ax.get_xscale() == "log":
                ax.set_xlim(low / 1.6, high * 2.5)
            else:
                pad = (high - low) * 0.15 or max(abs(high) * 0.2, 1e-9)
                ax.set_xlim(low - pad, high + 2 * pad)
        ax.set_xlabel(EFFICIENCY_AXES.get(cost, cost))
        ax.set_ylabel(f"{'average ' if families is not None else ''}{metric} ({variant})")
        ax.axhline(0.5, color="0.7", lw=0.8, zorder=0)
        ax.grid(alpha=0.3)
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color="0.3", marker=markers[d], linestyle="", label=d) for d in datasets
    ]
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=min(4, len(handles)),
        fontsize=8,
        title="dataset",
        title_fontsize=8,
    )
    if untimed:
        fig.suptitle("not drawn (no network to time): " + ", ".join(untimed), fontsize=8)
    return save_png(fig, path)


# --------------------------------------------------------------------------- forgery quality


def forgery_quality_figure(card: pd.DataFrame, method: str, path: str | Path) -> Path:
    """One method's quality card: a panel per measure (rows: datasets, and backends where
    the card compares them), per group the mean and its subject-bootstrap interval; a group
    that differs is drawn red, and each panel's title gives the Kruskal–Wallis p-value and
    whether the groups' fakes are equal."""
    rows = card.loc[card["method"] == method]
    if rows.empty:
        return _message(path, f"no fakes of {method} were measured")
    panels = sorted(set(zip(rows["dataset"], rows["backend"])))
    compared = rows["backend"].nunique() > 1
    measures = list(CARD_MEASURES)
    per_row = 4
    lines = -(-len(measures) // per_row)  # panel rows per dataset (and backend)
    fig, axes = _grid(len(panels) * lines, per_row, width=2.8, height=2.4)
    verdicts = []
    for r, (dataset_name, backend) in enumerate(panels):
        part = rows.loc[(rows["dataset"] == dataset_name) & (rows["backend"] == backend)]
        part = part.sort_values("group")
        dataset = f"{dataset_name} ({backend})" if compared else dataset_name
        x = np.arange(len(part))
        for c, measure in enumerate(measures):
            ax = axes[r * lines + c // per_row, c % per_row]
            mean = part[measure].to_numpy(float)
            lo = part[f"{measure}_ci_low"].to_numpy(float)
            hi = part[f"{measure}_ci_high"].to_numpy(float)
            bad = np.array([measure in str(d).split(", ") for d in part["differs"]])
            err = np.vstack([np.clip(mean - lo, 0, None), np.clip(hi - mean, 0, None)])
            for sel, colour in ((~bad, "#3a7d44"), (bad, "#c0392b")):
                if sel.any():
                    ax.errorbar(
                        x[sel],
                        mean[sel],
                        yerr=np.nan_to_num(err[:, sel]),
                        fmt="o",
                        color=colour,
                        capsize=3,
                    )
            p = part[f"{measure}_p"].iloc[0]
            equal = not (np.isfinite(p) and p < QUALITY_ALPHA)
            ax.set_title(
                f"{measure}\np={p:.3f}: {'equal' if equal else 'differ'}"
                if np.isfinite(p)
                else f"{measure}\n(not measured)",
                fontsize=8,
                color="black" if equal else "#c0392b",
            )
            ax.set_xticks(x, part["group"].astype(str), fontsize=7, rotation=45)
            ax.tick_params(axis="y", labelsize=7)
            if c % per_row == 0:
                ax.set_ylabel(dataset, fontsize=9)
        differing = sorted({m for d in part["differs"] for m in str(d).split(", ") if m})
        verdicts.append(
            f"{dataset}: groups differ in {', '.join(differing)}"
            if differing
            else f"{dataset}: fakes of equal quality in every group"
        )
    fig.suptitle(f"{method} — " + "; ".join(verdicts), fontsize=10)
    return save_png(fig, path)


# --------------------------------------------------------------------------- face backends


def face_backends_figure(table: pd.DataFrame, path: str | Path, dataset: str = "") -> Path:
    """Detection rate, landmark failure rate and alignment error per face backend and group,
    with their bootstrap intervals (``face_detection_by_backend.csv``)."""
    frame = table.loc[table["group"] != "(all)"] if not table.empty else table
    if frame.empty:
        return _message(path, "No face backends compared.")
    backends = list(dict.fromkeys(frame["backend"]))
    groups = sorted(frame["group"].astype(str).unique())
    colours = _colours(groups)
    panels = (
        ("detection_rate", "detection rate"),
        ("landmark_failure_rate", "landmark failure rate"),
        ("alignment_error", "alignment error (IOD)"),
    )
    fig, axes = _grid(1, len(panels), max(PANEL[0], 1.1 * len(backends) + 1.5), PANEL[1])
    width = 0.8 / max(1, len(groups))
    x = np.arange(len(backends))
    for c, (name, label) in enumerate(panels):
        ax = axes[0, c]
        for k, group in enumerate(groups):
            cell = (
                frame.loc[frame["group"].astype(str) == group]
                .set_index("backend")
                .reindex(backends)
            )
            value = cell[name].to_numpy(float)
            low = np.clip(value - cell[f"{name}_low"].to_numpy(float), 0, None)
            high = np.clip(cell[f"{name}_high"].to_numpy(float) - value, 0, None)
            ax.bar(
                x + (k - (len(groups) - 1) / 2) * width,
                value,
                width,
                yerr=np.vstack([np.nan_to_num(low), np.nan_to_num(high)]),
                capsize=2,
                color=colours[group],
                label=group,
            )
        ax.set_xticks(x, backends, fontsize=8)
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
        top = float(np.nanmax(frame[f"{name}_high"].to_numpy(float), initial=0.0))
        ax.set_ylim(0, 1.05 if c == 0 else max(0.05, 1.15 * top))
        if c == 0:
            ax.legend(fontsize=7)
    fig.suptitle(f"face backends per group{f' ({dataset})' if dataset else ''}", fontsize=10)
    return save_png(fig, path)


def detection_under_perturbation_figure(table: pd.DataFrame) -> Figure:
    """Bars of the face-detection rate per frame variant (x) and group (colour): the share
    of the samples found on the clean frame whose face is still found on the degraded one."""
    fig = Figure(figsize=(max(4.0, 1.2 * max(1, table["variant"].nunique()) + 2), 3.2))
    ax = fig.add_subplot()
    parts = table[table["group"] != "(all)"]
    variants = list(dict.fromkeys(parts["variant"]))
    groups = sorted(parts["group"].unique())
    width = 0.8 / max(1, len(groups))
    x = np.arange(len(variants))
    for k, group in enumerate(groups):
        rates = parts[parts["group"] == group].set_index("variant")["rate"]
        ax.bar(x + (k - (len(groups) - 1) / 2) * width, rates.reindex(variants), width, label=group)
    ax.set_xticks(x, variants, rotation=20, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel("face still detected")
    ax.set_title("Face detection on degraded frames, per group", fontsize=10)
    if groups:
        ax.legend(fontsize=7, ncols=min(4, len(groups)))
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- FairFD A.6, A.7


def subject_rates_figure(rates: pd.DataFrame, path: str | Path) -> Path:
    """FairFD Fig. 5: each subject's TPR and TNR (panels; rows: datasets), per detector one
    box per group over its subjects, every subject a point on it."""
    if rates.empty:
        return _message(path, "No subject has predictions on the evaluated split.")
    datasets = sorted(rates["dataset"].unique())
    detectors = sorted(rates["detector"].unique())
    groups = sorted(rates["group"].astype(str).unique())
    colours = _colours(groups)
    width = 0.8 / len(groups)
    fig, axes = _grid(len(datasets), 2, width=max(PANEL[0], 0.35 * len(detectors) * len(groups)))
    for r, dataset in enumerate(datasets):
        data = rates.loc[rates["dataset"] == dataset]
        for c, rate in enumerate(("TPR", "TNR")):
            ax = axes[r, c]
            for d, detector in enumerate(detectors):
                for g, group in enumerate(groups):
                    values = data.loc[
                        (data["detector"] == detector) & (data["group"].astype(str) == group),
                        rate,
                    ].dropna()
                    if values.empty:
                        continue
                    x = d - 0.4 + width * (g + 0.5)
                    ax.boxplot(
                        values.to_numpy(float),
                        positions=[x],
                        widths=width * 0.8,
                        showfliers=False,
                        patch_artist=True,
                        boxprops={"facecolor": colours[group], "alpha": 0.35},
                        medianprops={"color": colours[group]},
                    )
                    ax.plot(
                        np.full(len(values), x),
                        values,
                        ".",
                        color=colours[group],
                        ms=3,
                        label=group if d == 0 else None,
                    )
            ax.set_xticks(range(len(detectors)), detectors, rotation=30, ha="right", fontsize=8)
            ax.set_xlim(-0.6, len(detectors) - 0.4)
            ax.set_ylim(-0.03, 1.03)
            ax.set_ylabel(f"{rate} per subject")
            ax.set_title(f"{rate} ({dataset})", fontsize=10)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=min(6, len(labels)))
    return save_png(fig, path)


def feature_tsne_figure(coords: pd.DataFrame, path: str | Path) -> Path:
    """FairFD Fig. 6: the t-SNE map of a detector's penultimate features, one panel per
    approach (rows: dataset x detector), one colour per group."""
    if coords.empty:
        return _message(path, "Too few feature samples for a t-SNE map.")
    rows = list(coords[["dataset", "detector"]].drop_duplicates().itertuples(index=False))
    methods = list(dict.fromkeys(coords["method"]))
    groups = sorted(coords["group"].astype(str).unique())
    colours = _colours(groups)
    fig, axes = _grid(len(rows), len(methods), width=PANEL[1], height=PANEL[1])
    for r, (dataset, detector) in enumerate(rows):
        for c, method in enumerate(methods):
            ax = axes[r, c]
            part = coords.loc[
                (coords["dataset"] == dataset)
                & (coords["detector"] == detector)
                & (coords["method"] == method)
            ]
            for group in groups:
                mine = part.loc[part["group"].astype(str) == group]
                if len(mine):
                    ax.scatter(
                        mine["x"], mine["y"], s=4, color=colours[group], label=group, alpha=0.7
                    )
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"{detector} on {dataset}: {method}", fontsize=9)
    handles = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=6)
    return save_png(fig, path)


def feature_mmd_figure(mmd: pd.DataFrame, path: str | Path) -> Path:
    """FairFD Fig. 7: each group's MMD² to the reference group, one bar per group within
    each approach; one panel per dataset x detector."""
    data = mmd.dropna(subset=["mmd2"]) if not mmd.empty else mmd
    if data.empty:
        return _message(path, "No group had the two feature samples an MMD needs.")
    panels = list(data[["dataset", "detector"]].drop_duplicates().itertuples(index=False))
    groups = sorted(data["group"].astype(str).unique())
    colours = _colours(groups)
    width = 0.8 / len(groups)
    fig, axes = _grid(1, len(panels))
    for c, (dataset, detector) in enumerate(panels):
        ax = axes[0, c]
        part = data.loc[(data["dataset"] == dataset) & (data["detector"] == detector)]
        methods = list(dict.fromkeys(part["method"]))
        for g, group in enumerate(groups):
            mine = part.loc[part["group"].astype(str) == group].set_index("method")
            x = [
                m - 0.4 + width * (g + 0.5) for m, name in enumerate(methods) if name in mine.index
            ]
            values = [mine.loc[name, "mmd2"] for name in methods if name in mine.index]
            ax.bar(x, values, width=width * 0.9, color=colours[group], label=group)
        ax.axhline(0.0, color="0.4", lw=0.8)
        ax.set_xticks(range(len(methods)), methods, fontsize=8)
        reference = ", ".join(sorted(part["reference_group"].astype(str).unique()))
        ax.set_ylabel(f"MMD² to {reference}")
        ax.set_title(f"{detector} on {dataset}", fontsize=10)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(6, max(1, len(labels))))
    return save_png(fig, path)
