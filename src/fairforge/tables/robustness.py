"""Robustness: AUC per operation and level, the drop from ``clean``, the mean over all
variants (the overall robustness score) and per operation category (each operation's own, or
a paper's: :data:`fairforge.perturb.suites.CATEGORY_SCHEMES`)."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.images import read_image
from fairforge.perturb import CLEAN, FRAME_SUFFIX, bits_per_pixel, op_for_variant, random_draws
from fairforge.perturb.suites import CATEGORY_SCHEMES
from fairforge.tables.detectors import find_twins
from fairforge.tables.variants import (
    RANDOM_CATEGORY,
    describe_variant,
    order_rows,
    with_variant_info,
)

#: What a row of :func:`robustness_table` is: a variant, a category mean or an overall score.
ROW_KEYS = ["scope", "category", "operation", "level", "severity", "variant"]
#: ``metrics.robustness_categories``: each operation's own category, or a paper's scheme.
OWN_CATEGORIES = "operation"


def scheme_categories(frame: pd.DataFrame, scheme: str) -> tuple[pd.Series, pd.Series]:
    """The ``modality/category`` label of each row's operation under ``scheme`` (its own
    category where the scheme does not name it) and its modality (empty where unnamed)."""
    if scheme not in CATEGORY_SCHEMES:
        raise ValueError(
            f"robustness categories {scheme!r}: expected {OWN_CATEGORIES!r} or one of "
            f"{sorted(CATEGORY_SCHEMES)}"
        )
    table = CATEGORY_SCHEMES[scheme]
    ops = frame["operation"].astype(str).str.removesuffix(FRAME_SUFFIX)
    named = ops.isin(list(table)) & (frame["category"] != RANDOM_CATEGORY)
    modality = ops.map(lambda op: table.get(op, ("", ""))[0]).where(named, "")
    label = ops.map(lambda op: "/".join(table.get(op, ("", ""))))
    return label.where(named, frame["category"]), modality


def population_std(values) -> float:
    """Population standard deviation (ddof = 0) of ``values``, NaNs left out: the Benchmark
    paper's robustness number over the perturbation types (§4.3); NaN when none is left."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    return float(arr.std(ddof=0)) if arr.size else float("nan")


def robustness_table(
    detection: pd.DataFrame, metric: str = "AUC", categories: str = OWN_CATEGORIES
) -> pd.DataFrame:
    """Robustness of each detector from the frame-level :func:`detection_table`.

    ``scope`` says what a row is: ``variant`` (one operation at one level, and ``clean``),
    ``category`` (mean over the variants of one operation category), ``overall`` (mean
    over every operation-level variant: the overall robustness score) or ``spread`` (the
    :func:`population_std` of the ``op@random`` variants' values, the Benchmark paper's
    robustness number, §4.3; only where such variants were scored). ``drop`` is the clean
    value minus the row's value (positive: worse than clean; empty on ``spread``).

    ``categories`` names a scheme of :data:`~fairforge.perturb.suites.CATEGORY_SCHEMES`
    (``assessment``) instead of each operation's own category: categories are then labelled
    ``modality/category`` (``image/denoising``, ``video/flip``) and each modality gets an
    ``overall`` row of its own (category ``image``, ``video``: the paper's overall scores of
    its image and video tables) before the overall over everything (``all``).
    """
    frame = detection.loc[detection["unit"] == "frame"] if "unit" in detection else detection
    frame = with_variant_info(frame[["dataset", "detector", "variant", metric]].copy())
    modality = pd.Series("", index=frame.index)
    if categories != OWN_CATEGORIES:
        frame["category"], modality = scheme_categories(frame, categories)
    frame["_modality"] = modality
    rows = []
    for (dataset, detector), part in frame.groupby(["dataset", "detector"], sort=True):
        clean = part.loc[part["variant"] == CLEAN, metric]
        clean_value = float(clean.iloc[0]) if len(clean) else np.nan
        part = order_rows(part.assign(scope="variant"))
        part["drop"] = clean_value - part[metric]
        rows.append(part.drop(columns="_modality"))
        ops = part.loc[part["variant"] != CLEAN]
        base = {
            "dataset": dataset,
            "detector": detector,
            "variant": "",
            "operation": "",
            "level": np.nan,
            "severity": np.nan,
        }
        for category, cat in ops.groupby("category", sort=True):
            rows.append(
                pd.DataFrame(
                    [
                        {
                            **base,
                            "scope": "category",
                            "category": category,
                            metric: cat[metric].mean(),
                            "n_variants": len(cat),
                            "drop": clean_value - cat[metric].mean(),
                        }
                    ]
                )
            )
        randomised = ops.loc[ops["category"] == RANDOM_CATEGORY, metric]
        if len(randomised):
            # the Benchmark paper's robustness number (§4.3): how far the perturbation types
            # at random intensity spread, beside their mean (the category row)
            rows.append(
                pd.DataFrame(
                    [
                        {
                            **base,
                            "scope": "spread",
                            "category": RANDOM_CATEGORY,
                            metric: population_std(randomised),
                            "n_variants": len(randomised),
                            "drop": np.nan,
                        }
                    ]
                )
            )
        # The overall score stays the mean over operation-level variants: the Benchmark
        # protocol's op@random rows have their own category mean.
        ops = ops.loc[ops["category"] != RANDOM_CATEGORY]
        overall = [
            (m, ops.loc[ops["_modality"] == m]) for m in sorted(set(ops["_modality"]) - {""})
        ]
        for name, members in [*overall, ("all", ops)]:
            value = members[metric].mean() if len(members) else np.nan
            rows.append(
                pd.DataFrame(
                    [
                        {
                            **base,
                            "scope": "overall",
                            "category": name,
                            metric: value,
                            "n_variants": len(members),
                            "drop": clean_value - value,
                        }
                    ]
                )
            )
    table = pd.concat(rows, ignore_index=True)
    table["n_variants"] = table["n_variants"].fillna(1).astype(np.int64)
    return table[["dataset", "detector", *ROW_KEYS, metric, "drop", "n_variants"]]


DRAW_COLUMNS = ["sample_id", "variant", "operation", "draw", "level", "param"]
DRAW_SUMMARY_COLUMNS = [
    "dataset",
    "operation",
    "draw",
    "param_mildest",
    "param_harshest",
    "n_drawn",
    "drawn_min",
    "drawn_mean",
    "drawn_max",
]


def _text(value) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_text(v) for v in value) + ")"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def random_intensity_draws(
    sample_ids, variants, options: Mapping[str, Mapping] | None = None
) -> pd.DataFrame:
    """The intensity every sample gets under each ``op@random`` variant: sample_id, variant,
    operation (as the tables name it), draw (``continuous`` or ``levels``), level (the
    tabulated level drawn, empty for a parameter between levels) and param (the
    operation's parameter; a pair or a combination's parts written as a tuple).

    ``options`` maps a variant to its variant options (:func:`fairforge.workflow.
    variant_options`). The draws are the ones :func:`fairforge.perturb.apply_variant` makes,
    seeded by (sample_id, variant).
    """
    ids = [str(s) for s in sample_ids]
    parts = []
    for variant in variants:
        opts = (options or {}).get(variant)
        drawn = random_draws(ids, variant, opts)
        parts.append(
            pd.DataFrame(
                {
                    "sample_id": ids,
                    "variant": variant,
                    "operation": describe_variant(variant)["operation"],
                    "draw": op_for_variant(variant, opts).draw,
                    "level": pd.array([lv for lv, _ in drawn], dtype="Int64"),
                    "param": [_text(p) for _, p in drawn],
                    "_value": [p for _, p in drawn],
                }
            )
        )
    if not parts:
        return pd.DataFrame(columns=DRAW_COLUMNS)
    return pd.concat(parts, ignore_index=True)


def random_draw_summary(
    draws: pd.DataFrame, dataset: str, options: Mapping[str, Mapping] | None = None
) -> pd.DataFrame:
    """Per ``op@random`` variant of ``draws`` (:func:`random_intensity_draws`): the
    parameters of the mildest and the harshest level (the range drawn from), the number of
    samples and the smallest, mean and largest parameter drawn (per component for a pair or
    a combination). ``draws`` may be read back from its csv (``param`` as text)."""
    rows = []
    for variant, part in draws.groupby("variant", sort=True):
        op = op_for_variant(variant, (options or {}).get(variant))
        if "_value" in part:
            values = list(part["_value"])
        else:
            values = [ast.literal_eval(str(p)) for p in part["param"]]
        arr = np.asarray(values, dtype=np.float64)
        stats = [arr.min(axis=0), arr.mean(axis=0), arr.max(axis=0)]
        stats = [tuple(s.tolist()) if np.ndim(s) else float(s) for s in stats]
        rows.append(
            {
                "dataset": dataset,
                "operation": part["operation"].iloc[0],
                "draw": part["draw"].iloc[0],
                "param_mildest": _text(op.ops[0].param),
                "param_harshest": _text(op.ops[-1].param),
                "n_drawn": len(part),
                "drawn_min": _text(stats[0]),
                "drawn_mean": _text(stats[1]),
                "drawn_max": _text(stats[2]),
            }
        )
    return pd.DataFrame(rows, columns=DRAW_SUMMARY_COLUMNS)


#: ``train_dataset`` of :func:`random_intensity_table`'s rows averaged over training sets:
#: all of them, and the commonly trained ones (``metrics.average_excludes`` left out).
MEAN_ALL = "(mean)"
MEAN_COMMON = "(mean, common)"
#: ``operation`` of the rows that give the spread over the perturbation types (§4.3).
SPREAD = "(std)"


def perturbation_spread(table: pd.DataFrame, metric: str = "AUC") -> pd.DataFrame:
    """One row per (dataset, arch, detector, train_dataset) of a random-intensity table
    whose ``metric`` is the :func:`population_std` of its rows' ``metric`` over the
    perturbation types (``operation`` :data:`SPREAD`, ``n_operations`` of them)."""
    keys = ["dataset", "arch", "detector", "train_dataset"]
    rows = table.loc[table["operation"] != SPREAD]
    spread = (
        rows.groupby(keys, sort=False)
        .agg(**{metric: (metric, population_std), "n_operations": ("operation", "nunique")})
        .reset_index()
    )
    return spread.assign(operation=SPREAD)


def random_intensity_table(
    robustness: pd.DataFrame,
    detectors: Mapping[str, Mapping],
    metric: str = "AUC",
    draws: pd.DataFrame | None = None,
    average_excludes: Sequence[str] = (),
) -> pd.DataFrame:
    """The Benchmark paper's protocol: ``metric`` per perturbation type, each sample at a
    random intensity (the ``op@random`` variants of :func:`robustness_table`), beside
    ``clean``; then, per architecture trained on several training sets (datasets, or one
    dataset's manipulations: ``train_methods``), the mean over them
    (``train_dataset`` :data:`MEAN_ALL`, ``n_training_sets``), and with ``average_excludes``
    the mean over the training sets on other datasets (:data:`MEAN_COMMON`: Table 4's and
    §4.3's commonly trained datasets, without DFDC and ForgeryNet). Last, per detector and
    per mean, the population standard deviation over the perturbation types
    (:func:`perturbation_spread`, operation :data:`SPREAD`): §4.3's robustness number.

    ``detectors`` maps a detector to its ``arch``, ``train_dataset`` and (optionally)
    ``train_methods``. ``draws`` (:func:`random_draw_summary` rows of every dataset) adds
    the intensities drawn: the range and the smallest, mean and largest parameter the
    samples got.
    """
    rows = robustness.loc[
        (robustness["scope"] == "variant") & (robustness["category"] == RANDOM_CATEGORY)
    ]
    clean = robustness.loc[
        (robustness["scope"] == "variant") & (robustness["variant"] == CLEAN),
        ["dataset", "detector", metric],
    ].rename(columns={metric: f"clean_{metric}"})
    table = rows[["dataset", "detector", "operation", metric]].merge(
        clean, on=["dataset", "detector"], how="left"
    )

    def setting(detector: str, key: str, default=""):
        return detectors.get(detector, {}).get(key, default)

    table["arch"] = table["detector"].map(lambda d: setting(d, "arch", d))
    table["train_dataset"] = table["detector"].map(lambda d: str(setting(d, "train_dataset")))
    table["_set"] = table["detector"].map(
        lambda d: repr((str(setting(d, "train_dataset")), sorted(setting(d, "train_methods", []))))
    )
    table["n_training_sets"] = 1
    keys = ["dataset", "arch", "operation"]
    several = table.loc[table.groupby(keys)["_set"].transform("nunique") > 1]
    excluded = set(average_excludes)
    means = [(MEAN_ALL, several)]
    if excluded:
        means.append((MEAN_COMMON, several.loc[~several["train_dataset"].isin(excluded)]))
    parts = [table]
    for label, members in means:
        if members.empty:
            continue
        mean = members.groupby(keys, sort=True).agg(
            **{
                metric: (metric, "mean"),
                f"clean_{metric}": (f"clean_{metric}", "mean"),
                "n_training_sets": ("_set", "nunique"),
            }
        )
        parts.append(mean.reset_index().assign(detector=lambda f: f["arch"], train_dataset=label))
    table = pd.concat(parts, ignore_index=True).drop(columns="_set")
    spread = perturbation_spread(table, metric)
    sizes = table.groupby(["dataset", "arch", "detector", "train_dataset"], sort=False)[
        "n_training_sets"
    ].first()
    spread["n_training_sets"] = [sizes[tuple(k)] for k in spread[sizes.index.names].to_numpy()]
    table = pd.concat([table, spread], ignore_index=True)
    columns = ["dataset", "arch", "detector", "train_dataset", "n_training_sets", "operation"]
    columns += [metric, f"clean_{metric}", "n_operations"]
    table["n_operations"] = table["n_operations"].astype("Int64")
    table = table[columns].sort_values(columns[:4], kind="stable").reset_index(drop=True)
    if draws is None:
        return table
    drawn = draws[[c for c in DRAW_SUMMARY_COLUMNS if c in draws.columns]]
    return table.merge(drawn, on=["dataset", "operation"], how="left")


# --------------------------------------------------------------------- codecs by bitrate

BPP_COLUMNS = ["dataset", "sample_id", "label", "method", "variant", "operation", "level", "bpp"]
RATE_COLUMNS = [
    "dataset",
    "detector",
    "operation",
    "level",
    "variant",
    "bpp",
    "bpp_std",
    "n_samples",
]


def compression_bpp(
    samples: pd.DataFrame,
    root: str | Path,
    variant: str,
    options: Mapping[str, Mapping] | None = None,
    split: str | None = "test",
) -> pd.DataFrame:
    """The rate a codec variant (``jpeg@q``, ``learned_compression@q``) spends on each sample
    of ``split`` that predictions score (``samples``: the samples manifest, paths under
    ``root``): one row per sample (:data:`BPP_COLUMNS`), bits per pixel of its crop as the
    detectors receive it. A crop that cannot be read stops with its path."""
    rows = samples if split is None else samples.loc[samples["split"] == split]
    rows = rows.sort_values("sample_id", kind="stable")
    info = describe_variant(variant)
    rates = [
        bits_per_pixel(read_image(Path(root) / path), variant, options) for path in rows["path"]
    ]
    return pd.DataFrame(
        {
            "dataset": rows["dataset"].astype(str).to_numpy(),
            "sample_id": rows["sample_id"].astype(str).to_numpy(),
            "label": rows["label"].to_numpy(),
            "method": rows["method"].astype(str).to_numpy(),
            "variant": variant,
            "operation": info["operation"],
            "level": info["level"],
            "bpp": np.asarray(rates, dtype=np.float64),
        },
        columns=BPP_COLUMNS,
    )


def compression_rate_table(
    robustness: pd.DataFrame, bpp: pd.DataFrame, metric: str = "AUC"
) -> pd.DataFrame:
    """The Assessment's Fig. 5: each detector's ``metric`` under each codec variant against
    the codec's mean bits per pixel on that dataset's scored samples (``bpp``: rows of
    :func:`compression_bpp`), with ``clean`` beside it. One row
    per dataset x detector x codec variant, mildest (highest rate) first."""
    rates = (
        bpp.groupby(["dataset", "operation", "level", "variant"], sort=True)["bpp"]
        .agg(bpp="mean", bpp_std="std", n_samples="size")
        .reset_index()
    )
    scored = robustness.loc[robustness["scope"] == "variant"]
    table = scored[["dataset", "detector", "variant", metric, "drop"]].merge(
        rates, on=["dataset", "variant"], how="inner"
    )
    clean = scored.loc[scored["variant"] == CLEAN, ["dataset", "detector", metric]]
    table = table.merge(
        clean.rename(columns={metric: f"clean_{metric}"}), on=["dataset", "detector"], how="left"
    )
    columns = [*RATE_COLUMNS, metric, f"clean_{metric}", "drop"]
    table = table.sort_values(
        ["dataset", "detector", "operation", "bpp"], ascending=[True, True, True, False]
    )
    table["n_samples"] = table["n_samples"].astype(np.int64)
    return table[columns].reset_index(drop=True)


# --------------------------------------------------------------------- augmentation twins

AUGMENTATION_COLUMNS = [
    "dataset",
    "detector",
    "augment",
    "twin",
    *ROW_KEYS,
    "baseline",
    "augmented",
    "change",
    "n_variants",
]


def augmentation_twins(settings: Mapping[str, Mapping]) -> list[tuple[str, str, str]]:
    """``(detector, twin, augment)``: every detector trained without augmentation and each
    detector that differs from it in ``augment`` alone (SDAug, DAug, AugMix twins)."""
    augments = sorted({str(s.get("augment")) for s in settings.values()} - {"none", "None"})
    return [
        (base, twin, augment)
        for augment in augments
        for base, twin in find_twins(settings, "augment", "none", augment)
    ]


def _paired_summary(pairs: pd.DataFrame) -> list[dict]:
    """Category means and overall scores of one detector and its twin over the variants
    both were scored on (a category labelled ``modality/category`` also counts toward its
    modality's overall score, as in :func:`robustness_table`)."""
    ops = pairs.loc[pairs["variant"] != CLEAN]
    summary = [
        ("category", category, part) for category, part in ops.groupby("category", sort=True)
    ]
    ops = ops.loc[ops["category"] != RANDOM_CATEGORY]
    modality = ops["category"].astype(str).map(lambda c: c.split("/")[0] if "/" in c else "")
    for name in sorted(set(modality) - {""}):
        summary.append(("overall", name, ops.loc[modality == name]))
    summary.append(("overall", "all", ops))
    return [
        {
            "scope": scope,
            "category": category,
            "baseline": part["baseline"].mean() if len(part) else np.nan,
            "augmented": part["augmented"].mean() if len(part) else np.nan,
            "n_variants": len(part),
        }
        for scope, category, part in summary
    ]


def augmentation_table(
    robustness: pd.DataFrame, twins: Sequence[tuple[str, str, str]], metric: str = "AUC"
) -> pd.DataFrame:
    """The Assessment's Tables 4-6 and Figs. 6-7: each detector beside its augmented twins
    (:func:`augmentation_twins`) on every variant of :func:`robustness_table`, every dataset:
    ``baseline`` (no augmentation), ``augmented`` (the twin) and ``change`` (augmented minus
    baseline: positive where the augmentation helps); then their category means and overall
    scores (the table's categories), over the variants both were scored on."""
    keys = ["dataset", "variant"]
    info = ["category", "operation", "level", "severity"]
    rows = robustness.loc[robustness["scope"] == "variant"]
    parts = []
    for base, twin, augment in twins:
        left = rows.loc[rows["detector"] == base, [*keys, *info, metric]]
        right = rows.loc[rows["detector"] == twin, [*keys, metric]]
        both = left.merge(right, on=keys, how="inner", suffixes=("_base", "_twin"))
        both = both.rename(columns={f"{metric}_base": "baseline", f"{metric}_twin": "augmented"})
        for dataset, pairs in both.groupby("dataset", sort=True):
            summary = pd.DataFrame(_paired_summary(pairs)).assign(dataset=dataset)
            parts.append(
                pd.concat([pairs.assign(scope="variant", n_variants=1), summary]).assign(
                    detector=base, augment=augment, twin=twin
                )
            )
    if not parts:
        return pd.DataFrame(columns=AUGMENTATION_COLUMNS)
    table = pd.concat(parts, ignore_index=True)
    table["change"] = table["augmented"] - table["baseline"]
    table["n_variants"] = table["n_variants"].astype(np.int64)
    return table[AUGMENTATION_COLUMNS]
