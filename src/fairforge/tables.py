"""The analysis tables of the report, built from predictions (and from each other).

Every table is computed per dataset (samples of different datasets can share ids) and is
evaluated on one split (``test`` by default); the validation split only fits thresholds.

- :func:`detection_table`: AUC, ACC, AP, EER per detector x dataset x variant, per frame
  and, where ``video_id`` exists, per video (mean frame score).
- :func:`robustness_table`: AUC per operation and level, the drop from ``clean``, the mean
  over all variants (the overall robustness score) and per operation category.
- :func:`fairness_under_perturbation`: every :func:`~fairforge.metrics.fairness_report`
  key per detector x variant.
- :func:`pvalue_table`: subject-level permutation p-values of every clean fairness gap.
- :func:`thresholds_table`: FairFD Table 5, global versus per-group thresholds.
- :func:`grayscale_table`: FairFD Table 6, ``grayscale@1`` next to ``clean``.
- :func:`balanced_table`: FairFD Table 4, detectors that differ only in ``balanced``.
- :func:`generalization_table`: train-on x test-on AUC (Benchmark paper Table 5).
- :func:`efficiency_with_metric`: each detector's cost next to its clean AUC per dataset.
- :func:`forgery_success_table`: success rate of each forgery method per group.
- :func:`exposure_summary`, :func:`exposure_matrix`, :func:`most_exposed_groups`: the
  ranking-exposure tables as the report shows them.
"""
from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from fairforge.metrics.detection import detection_metrics, video_level
from fairforge.metrics.fairness import fairness_report
from fairforge.metrics.thresholds import compare_thresholds
from fairforge.metrics.uncertainty import permutation_pvalues
from fairforge.perturb import (CLEAN, OPERATIONS, PerturbationError, parse_variant,
                               unavailable_reason)
from fairforge.registry import UnknownName

KEYS = ["dataset", "detector", "variant"]
# Settings that say where and how fast a model was trained, not what was trained.
RUNTIME_SETTINGS = ("threads", "device", "num_workers")
GRAYSCALE = "grayscale@1"


# --------------------------------------------------------------------------- variants

def has_video_pipeline() -> bool:
    """Whether the video operations (ffmpeg, module ``fairforge.video``) are installed."""
    return importlib.util.find_spec("fairforge.video") is not None


def describe_variant(variant: str) -> dict:
    """Operation, level, severity rank (1 = mildest) and category of a variant.

    ``clean`` has category ``clean`` and severity 0. Video operations share the category
    ``video``. An operation nobody registered is ``video`` when the video pipeline exists,
    else ``other``; its severity is its rank among the levels seen (filled in by the tables).
    """
    if variant == CLEAN:
        return {"variant": variant, "operation": CLEAN, "level": 0, "severity": 0,
                "category": CLEAN}
    name, level = parse_variant(variant)
    if name not in OPERATIONS:
        return {"variant": variant, "operation": name, "level": level, "severity": np.nan,
                "category": "video" if has_video_pipeline() else "other"}
    meta = OPERATIONS.metadata(name)
    severity = meta["levels"].index(level) + 1 if level in meta["levels"] else np.nan
    return {"variant": variant, "operation": name, "level": level, "severity": severity,
            "category": "video" if meta["kind"] == "video" else meta["category"]}


def variant_sort_key(variant: str) -> tuple:
    """``clean`` first, then by operation and severity (mildest first)."""
    if variant == CLEAN:
        return (0, "", 0.0)
    try:
        info = describe_variant(variant)
    except PerturbationError:
        return (2, variant, 0.0)
    rank = info["severity"] if np.isfinite(info["severity"]) else info["level"]
    return (1, info["operation"], float(rank))


def sorted_variants(variants: Iterable[str]) -> list[str]:
    return sorted(dict.fromkeys(variants), key=variant_sort_key)


def variant_unavailable_reason(variant: str,
                               options: Mapping[str, Mapping] | None = None) -> str | None:
    """Why a configured variant cannot be evaluated, or None
    (:func:`fairforge.perturb.variants.unavailable_reason`); an unknown operation is
    reported, not raised. Malformed variants and invalid levels still raise: they are
    configuration errors.
    """
    try:
        return unavailable_reason(variant, options)
    except UnknownName as err:
        return str(err)


def split_variants(variants: Iterable[str], options: Mapping[str, Mapping] | None = None
                   ) -> tuple[list[str], dict[str, str]]:
    """``(available, {unavailable variant: reason})``; ``clean`` is always available, first."""
    available, unavailable = [CLEAN], {}
    for variant in sorted_variants(variants):
        reason = variant_unavailable_reason(variant, options)
        if reason is None:
            if variant not in available:
                available.append(variant)
        else:
            unavailable[variant] = reason
    return available, unavailable


def _with_variant_info(frame: pd.DataFrame) -> pd.DataFrame:
    info = pd.DataFrame([describe_variant(v) for v in frame["variant"]], index=frame.index)
    # Operations without registered levels get their severity from the order of their levels.
    unknown = info["severity"].isna()
    if unknown.any():
        info.loc[unknown, "severity"] = (info.loc[unknown].groupby("operation")["level"]
                                         .rank(method="dense"))
    return frame.assign(**{c: info[c] for c in ("operation", "level", "severity", "category")})


def _order(frame: pd.DataFrame, by: Sequence[str] = ("dataset", "detector")) -> pd.DataFrame:
    """Rows sorted by ``by`` then by variant order (clean first, mildest first)."""
    rank = {v: i for i, v in enumerate(sorted_variants(frame["variant"].unique()))}
    return (frame.assign(_rank=frame["variant"].map(rank))
            .sort_values([*by, "_rank"], kind="stable").drop(columns="_rank")
            .reset_index(drop=True))


# --------------------------------------------------------------------------- inputs

def evaluation_rows(preds: pd.DataFrame, split: str | None = "test") -> pd.DataFrame:
    """Rows of one split (all rows when ``split`` is None or there is no split column)."""
    if split is None or "split" not in preds.columns:
        return preds
    return preds.loc[preds["split"] == split]


def _groups(preds: pd.DataFrame, keys: Sequence[str] = KEYS):
    missing = [k for k in keys if k not in preds.columns]
    if missing:
        raise ValueError(f"predictions lack column(s) {missing}")
    yield from preds.groupby(list(keys), sort=True, observed=True)


def table_from_files(paths: Iterable[str | Path], build, **kwargs) -> pd.DataFrame:
    """``build(predictions, **kwargs)`` for each predictions file, concatenated.

    Every table here is computed per detector x dataset x variant, which is one file, so
    only one file is in memory at a time however many variants a run has.
    """
    from fairforge.manifest import read_manifest

    parts = [build(read_manifest(path, contract="predictions"), **kwargs) for path in paths]
    if not parts:
        raise ValueError("no predictions files")
    table = pd.concat(parts, ignore_index=True)
    by = [c for c in ("dataset", "detector", "unit") if c in table.columns]
    if "variant" not in table.columns:
        return table.sort_values(by, kind="stable").reset_index(drop=True)
    return _order(table, by)


# --------------------------------------------------------------------------- detection

def _video_frames(part: pd.DataFrame) -> pd.DataFrame | None:
    """Frames that belong to a video, keyed so that a fake clip and its source clip (which
    share the source's ``video_id``) count as two videos."""
    if "video_id" not in part.columns:
        return None
    frames = part.loc[part["video_id"].notna()]
    if frames.empty:
        return None
    return frames.assign(video_key=frames["method"].astype(str) + "/" + frames["video_id"].astype(str))


def detection_table(preds: pd.DataFrame, threshold: float = 0.5,
                    split: str | None = "test") -> pd.DataFrame:
    """AUC, ACC (at ``threshold``), AP, EER and counts per dataset x detector x variant.

    ``unit`` is ``frame`` (every prediction) or ``video`` (one score per video, the mean of
    its frame scores; only where ``video_id`` exists). Counts are of frames or videos.
    """
    rows = []
    for (dataset, detector, variant), part in _groups(evaluation_rows(preds, split)):
        base = {"dataset": dataset, "detector": detector, "variant": variant}
        rows.append({**base, "unit": "frame",
                     **detection_metrics(part["label"].to_numpy(), part["score"].to_numpy(),
                                         threshold)})
        frames = _video_frames(part)
        if frames is not None:
            rows.append({**base, "unit": "video",
                         **video_level(frames, video_col="video_key", threshold=threshold)})
    if not rows:
        raise ValueError(f"no predictions of split {split!r}")
    table = _order(pd.DataFrame(rows), ("dataset", "detector", "unit"))
    for col in ("n", "n_real", "n_fake"):
        table[col] = table[col].astype(np.int64)
    return table


# --------------------------------------------------------------------------- robustness

def robustness_table(detection: pd.DataFrame, metric: str = "AUC") -> pd.DataFrame:
    """Robustness of each detector from the frame-level :func:`detection_table`.

    ``scope`` says what a row is: ``variant`` (one operation at one level, and ``clean``),
    ``category`` (mean over the variants of one operation category) or ``overall`` (mean
    over every operation-level variant: the overall robustness score). ``drop`` is the clean
    value minus the row's value (positive: worse than clean).
    """
    frame = detection.loc[detection["unit"] == "frame"] if "unit" in detection else detection
    frame = _with_variant_info(frame[["dataset", "detector", "variant", metric]].copy())
    rows = []
    for (dataset, detector), part in frame.groupby(["dataset", "detector"], sort=True):
        clean = part.loc[part["variant"] == CLEAN, metric]
        clean_value = float(clean.iloc[0]) if len(clean) else np.nan
        part = _order(part.assign(scope="variant"))
        part["drop"] = clean_value - part[metric]
        rows.append(part)
        ops = part.loc[part["variant"] != CLEAN]
        base = {"dataset": dataset, "detector": detector, "variant": "", "operation": "",
                "level": np.nan, "severity": np.nan}
        for category, cat in ops.groupby("category", sort=True):
            rows.append(pd.DataFrame([{**base, "scope": "category", "category": category,
                                       metric: cat[metric].mean(), "n_variants": len(cat),
                                       "drop": clean_value - cat[metric].mean()}]))
        rows.append(pd.DataFrame([{**base, "scope": "overall", "category": "all",
                                   metric: ops[metric].mean() if len(ops) else np.nan,
                                   "n_variants": len(ops),
                                   "drop": clean_value - ops[metric].mean() if len(ops) else np.nan}]))
    table = pd.concat(rows, ignore_index=True)
    table["n_variants"] = table["n_variants"].fillna(1).astype(np.int64)
    columns = ["dataset", "detector", "scope", "category", "operation", "level", "severity",
               "variant", metric, "drop", "n_variants"]
    return table[columns]


# --------------------------------------------------------------------------- fairness

def fairness_under_perturbation(preds: pd.DataFrame, threshold: float = 0.5,
                                ur_denominator: str = "one_plus_acc",
                                split: str | None = "test") -> pd.DataFrame:
    """One row per dataset x detector x variant, one column per fairness_report key."""
    rows = []
    for (dataset, detector, variant), part in _groups(evaluation_rows(preds, split)):
        rows.append({"dataset": dataset, "detector": detector, "variant": variant,
                     **fairness_report(part, threshold, ur_denominator)})
    table = _order(_with_variant_info(pd.DataFrame(rows)))
    first = ["dataset", "detector", "variant", "operation", "level", "severity", "category"]
    return table[first + [c for c in table.columns if c not in first]]


def pvalue_table(preds: pd.DataFrame, n_perm: int = 1000, seed: int = 0, threshold: float = 0.5,
                 ur_denominator: str = "one_plus_acc", split: str | None = "test",
                 variant: str = CLEAN) -> pd.DataFrame:
    """Permutation p-values (group labels shuffled across subjects) that each gap of the
    ``variant`` predictions is larger than chance: dataset, detector, metric, value, p_value."""
    rows = []
    preds = evaluation_rows(preds, split)
    if "variant" in preds.columns:
        preds = preds.loc[preds["variant"] == variant]
    for (dataset, detector), part in _groups(preds, ("dataset", "detector")):
        observed = fairness_report(part, threshold, ur_denominator)
        pvalues = permutation_pvalues(part, n_perm, seed, ur_denominator, threshold)
        rows += [{"dataset": dataset, "detector": detector, "metric": m, "value": observed[m],
                  "p_value": p, "n_perm": n_perm} for m, p in pvalues.items()]
    return pd.DataFrame(rows, columns=["dataset", "detector", "metric", "value", "p_value",
                                       "n_perm"])


def thresholds_table(preds: pd.DataFrame, threshold: float = 0.5,
                     ur_denominator: str = "one_plus_acc", fit_split: str = "val",
                     eval_split: str = "test", variant: str = CLEAN) -> pd.DataFrame:
    """FairFD Table 5: utility and fairness on ``eval_split`` at the global ``threshold`` and
    at per-group thresholds fitted on ``fit_split``.

    Rows: every fairness_report key, then ``threshold[<group>]`` (the thresholds themselves).
    Columns: dataset, detector, metric, global, per_group, change (per_group - global).
    """
    if "variant" in preds.columns:
        preds = preds.loc[preds["variant"] == variant]
    rows = []
    for (dataset, detector), part in _groups(preds, ("dataset", "detector")):
        fit, test = evaluation_rows(part, fit_split), evaluation_rows(part, eval_split)
        if fit.empty or test.empty:
            raise ValueError(f"{dataset}/{detector}: the {fit_split!r} and {eval_split!r} "
                             "splits are both needed (config inference.splits)")
        table, fitted = compare_thresholds(fit, test, threshold, ur_denominator)
        for group in sorted(set(test["group"].astype(str)) | set(fitted)):
            table.loc[f"threshold[{group}]"] = [threshold, fitted.get(group, threshold)]
        rows.append(table.reset_index().assign(dataset=dataset, detector=detector))
    table = pd.concat(rows, ignore_index=True)
    table = table.rename(columns={"index": "metric"})
    table["change"] = table["per_group"] - table["global"]
    return table[["dataset", "detector", "metric", "global", "per_group", "change"]]


def _metric_columns(fup: pd.DataFrame) -> list[str]:
    info = {"dataset", "detector", "variant", "operation", "level", "severity", "category"}
    return [c for c in fup.columns if c not in info]


def grayscale_table(fup: pd.DataFrame, variant: str = GRAYSCALE) -> pd.DataFrame:
    """FairFD Table 6: every metric on ``clean`` and on ``variant`` side by side, per detector.

    Empty (with the columns) when the variant was not evaluated.
    """
    columns = ["dataset", "detector", "metric", "clean", "grayscale", "change"]
    if variant not in set(fup["variant"]):
        return pd.DataFrame(columns=columns)
    metrics = _metric_columns(fup)
    rows = []
    for (dataset, detector), part in fup.groupby(["dataset", "detector"], sort=True):
        by_variant = part.set_index("variant")
        if CLEAN not in by_variant.index or variant not in by_variant.index:
            continue
        clean, gray = by_variant.loc[CLEAN, metrics], by_variant.loc[variant, metrics]
        rows.append(pd.DataFrame({"dataset": dataset, "detector": detector, "metric": metrics,
                                  "clean": clean.to_numpy(float), "grayscale": gray.to_numpy(float),
                                  "change": (gray - clean).to_numpy(float)}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)


# --------------------------------------------------------------------------- detector twins

def detector_settings_table(checkpoints: Mapping[str, str | Path],
                            fallback: Mapping[str, Mapping] | None = None,
                            train_datasets: Mapping[str, str] | None = None) -> dict[str, dict]:
    """What trained each detector: the ``train_config`` saved in its checkpoint (else the
    ``fallback`` settings, e.g. from the config), with its ``train_dataset``."""
    import torch

    fallback = fallback or {}
    out = {}
    for name, path in checkpoints.items():
        settings = None
        if path is not None and Path(path).is_file():
            payload = torch.load(path, map_location="cpu", weights_only=True)
            if isinstance(payload, dict) and isinstance(payload.get("train_config"), dict):
                settings = dict(payload["train_config"])
        if settings is None:
            settings = dict(fallback.get(name, {}))
        if train_datasets and name in train_datasets:
            settings["train_dataset"] = train_datasets[name]
        out[name] = settings
    return out


def _comparable(settings: Mapping, ignore: Iterable[str]) -> dict:
    skip = set(RUNTIME_SETTINGS) | set(ignore)
    return {k: v for k, v in settings.items() if k not in skip}


def find_twins(settings: Mapping[str, Mapping], key: str, base_value, twin_value
               ) -> list[tuple[str, str]]:
    """Pairs ``(base, twin)`` of detectors whose settings differ only in ``key``, with
    ``key`` equal to ``base_value`` and ``twin_value`` (runtime settings are ignored)."""
    pairs = []
    for a, b in itertools.permutations(sorted(settings), 2):
        sa, sb = settings[a], settings[b]
        if sa.get(key) == base_value and sb.get(key) == twin_value \
                and _comparable(sa, [key]) == _comparable(sb, [key]):
            pairs.append((a, b))
    return pairs


def balanced_twins(settings: Mapping[str, Mapping]) -> list[tuple[str, str]]:
    return find_twins(settings, "balanced", False, True)


def sdaug_twins(settings: Mapping[str, Mapping]) -> list[tuple[str, str]]:
    return find_twins(settings, "augment", "none", "sdaug")


DETECTOR_COLUMNS = ["arch", "train_dataset", "train_methods", "augment", "balanced", "epochs",
                    "batch_size", "lr", "input_size"]


def detectors_frame(settings: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per detector: what trained it, and the detector it is the SDAug or balanced
    twin of (empty when none)."""
    sdaug = {t: b for b, t in sdaug_twins(settings)}
    balanced = {t: b for b, t in balanced_twins(settings)}
    rows = []
    for name in sorted(settings):
        s = settings[name]
        row = {"detector": name}
        for col in DETECTOR_COLUMNS:
            value = s.get(col)
            row[col] = ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else value
        row["sdaug_twin_of"] = sdaug.get(name, "")
        row["balanced_twin_of"] = balanced.get(name, "")
        rows.append(row)
    return pd.DataFrame(rows, columns=["detector", *DETECTOR_COLUMNS, "sdaug_twin_of",
                                       "balanced_twin_of"])


def twins_from_frame(detectors: pd.DataFrame, kind: str = "sdaug") -> list[tuple[str, str]]:
    """``(base, twin)`` pairs recorded by :func:`detectors_frame` (``kind``: sdaug, balanced)."""
    column = f"{kind}_twin_of"
    if detectors.empty or column not in detectors.columns:
        return []
    rows = detectors.loc[detectors[column].fillna("").astype(str) != ""]
    return sorted(zip(rows[column].astype(str), rows["detector"].astype(str)))


def balanced_table(fairness: pd.DataFrame, pairs: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """FairFD Table 4: utility and fairness of each (standard, balanced) pair side by side.

    ``fairness`` is ``fairness_table.csv`` (rows dataset x metric, one column per detector).
    """
    columns = ["dataset", "detector", "balanced_detector", "metric", "standard", "balanced",
               "change"]
    rows = []
    for base, twin in pairs:
        if base not in fairness.columns or twin not in fairness.columns:
            continue
        rows.append(pd.DataFrame({"dataset": fairness["dataset"], "detector": base,
                                  "balanced_detector": twin, "metric": fairness["metric"],
                                  "standard": fairness[base].astype(float),
                                  "balanced": fairness[twin].astype(float),
                                  "change": fairness[twin].astype(float) - fairness[base].astype(float)}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)


# --------------------------------------------------------------------------- generalization

def generalization_table(detection: pd.DataFrame, settings: Mapping[str, Mapping],
                         metric: str = "AUC", variant: str = CLEAN) -> pd.DataFrame:
    """Train-on x test-on ``metric`` (Benchmark paper Table 5), one block per detector family.

    A family is a set of detectors whose settings differ only in ``train_dataset``; it is
    named after its first member. Rows: one per detector (its training dataset), then an
    ``average`` row (mean over training datasets); columns: each test dataset, then
    ``average`` (mean over test datasets, in-domain included). With a single dataset the
    table holds one ``note``.
    """
    frame = detection.loc[(detection["variant"] == variant)
                          & (detection.get("unit", "frame") == "frame")]
    datasets = sorted(frame["dataset"].unique())
    if len(datasets) < 2:
        return pd.DataFrame({"note": [
            f"one dataset configured ({', '.join(datasets) or 'none'}): no cross-dataset "
            "generalization to measure; configure two or more datasets"]})
    values = frame.pivot_table(index="detector", columns="dataset", values=metric,
                               aggfunc="first").reindex(columns=datasets)
    families: dict[str, list[str]] = {}
    for name in sorted(settings):
        key = repr(sorted(_comparable(settings[name], ["train_dataset"]).items()))
        families.setdefault(key, []).append(name)
    blocks = []
    for members in families.values():
        members = sorted(members, key=lambda d: (str(settings[d].get("train_dataset")), d))
        block = values.reindex(members)
        block.insert(0, "train_dataset", [settings[d].get("train_dataset") for d in members])
        block.insert(0, "family", members[0])
        block["average"] = block[datasets].mean(axis=1)
        avg = block[datasets + ["average"]].mean(axis=0)
        block.loc["average"] = pd.Series({"family": members[0], "train_dataset": "average", **avg})
        blocks.append(block.rename_axis("detector").reset_index())
    table = pd.concat(blocks, ignore_index=True)
    return table[["family", "detector", "train_dataset", *datasets, "average"]]


# --------------------------------------------------------------------------- efficiency

# Cost columns of efficiency.csv the figure plots AUC against, with their axis labels.
EFFICIENCY_AXES = {"gflops": "GFLOPs per image", "params": "parameters",
                   "latency_ms_bs1": "latency per image at batch 1 (ms)"}


def clean_metric(detection: pd.DataFrame, metric: str = "AUC",
                 variant: str = CLEAN) -> pd.DataFrame:
    """``metric`` of every detector on every dataset under ``variant`` (frame level):
    columns detector, dataset, ``metric``; sorted by detector then dataset."""
    frame = detection.loc[detection["variant"] == variant]
    if "unit" in frame.columns:
        frame = frame.loc[frame["unit"] == "frame"]
    return (frame[["detector", "dataset", metric]].sort_values(["detector", "dataset"])
            .reset_index(drop=True))


def efficiency_with_metric(efficiency: pd.DataFrame, detection: pd.DataFrame,
                           metric: str = "AUC", variant: str = CLEAN) -> pd.DataFrame:
    """One row per detector x dataset: the detector's cost (``efficiency.csv``) next to its
    ``metric`` on that dataset under ``variant``. Detectors without a timed network
    (classical ones: a ``note`` instead of costs) keep NaN costs."""
    quality = clean_metric(detection, metric, variant)
    merged = efficiency.merge(quality, on="detector", how="inner")
    first = ["detector", "dataset", metric]
    return (merged[first + [c for c in merged.columns if c not in first]]
            .sort_values(["detector", "dataset"]).reset_index(drop=True))


# --------------------------------------------------------------------------- forgeries

def _reason_counts(reasons: pd.Series) -> str:
    """A JSON object reason -> count (as in ``face_detection_rate.csv``), keys sorted."""
    import json

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

        def summarise(part: pd.DataFrame, method: str, group: str) -> dict:
            made = int(part["ok"].sum())
            return {"dataset": dataset, "method": method, "group": group,
                    "attempted": len(part), "made": made,
                    "success_rate": made / len(part) if len(part) else np.nan,
                    "failures": _reason_counts(part.loc[~part["ok"], "reason"])}

        for method, by_method in frame.groupby("method", sort=True):
            rows += [summarise(part, method, group)
                     for group, part in by_method.groupby("group", sort=True)]
            rows.append(summarise(by_method, method, "(all)"))
    columns = ["dataset", "method", "group", "attempted", "made", "success_rate", "failures"]
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values(["dataset", "method"], kind="stable").reset_index(drop=True)


def rate_cells(table: pd.DataFrame, index: Sequence[str], rate: str, count: str,
               total: str) -> pd.DataFrame:
    """Rows ``index``, one column per group (``(all)`` last): "rate (count/total)"."""
    if table.empty:
        return table
    frame = table.assign(cell=[f"{r:.3f} ({c}/{t})" for r, c, t in
                               zip(table[rate], table[count], table[total])])
    groups = sorted(set(frame["group"]) - {"(all)"}) + (["(all)"] if "(all)" in set(frame["group"])
                                                        else [])
    wide = frame.pivot_table(index=list(index), columns="group", values="cell",
                             aggfunc="first", sort=True).reindex(columns=groups)
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


# --------------------------------------------------------------------------- exposure

def exposure_summary(exposure: pd.DataFrame) -> pd.DataFrame:
    """The exposure table a reader compares encoders by: encoder, setting, convention, hit
    ratios, disparate visibility and exposure, then visibility and exposure of each group."""
    lead = ["encoder", "setting", "convention"]
    hits = [c for c in exposure.columns if c.startswith("hit_ratio@")]
    disparate = ["disparate_visibility", "disparate_exposure"]
    per_group = ([c for c in exposure.columns if c.startswith("visibility_")]
                 + [c for c in exposure.columns if c.startswith("exposure_")])
    return exposure[lead + hits + disparate + per_group].reset_index(drop=True)


def exposure_matrix(per_probe_group: pd.DataFrame,
                    values: Sequence[str] = ("visibility", "exposure")) -> pd.DataFrame:
    """The per-probe-group matrices side by side: rows encoder x setting x convention x
    probe group (with its number of probes), for each of ``values`` one column per gallery
    group ("exposure of tone2": the exposure of that gallery group in the rankings of
    these probes). Encoders, settings and conventions keep their order in the file."""
    keys = ["encoder", "setting", "convention"]
    index = [*keys, "probe_group", "n_probes"]
    galleries = sorted(per_probe_group["gallery_group"].astype(str).unique())
    frame = per_probe_group.assign(gallery_group=per_probe_group["gallery_group"].astype(str))
    wide = frame.pivot_table(index=index, columns="gallery_group", values=list(values),
                             aggfunc="first", sort=False)
    wide = wide.reindex(columns=[(v, g) for v in values for g in galleries])
    wide.columns = [f"{v} of {g}" for v, g in wide.columns]
    wide = wide.reset_index()
    ranks = {f"_{k}": wide[k].map({v: i for i, v in enumerate(dict.fromkeys(frame[k]))})
             for k in keys}
    return (wide.assign(**ranks).sort_values([*ranks, "probe_group"], kind="stable")
            .drop(columns=list(ranks)).reset_index(drop=True))


def most_exposed_groups(exposure: pd.DataFrame, convention: str = "false_positive"
                        ) -> pd.DataFrame:
    """Per encoder and setting, the group with the largest exposure under ``convention``
    (``false_positive``: the group most exposed as a wrong suspect), its exposure and the
    runner-up's. Ties go to the first group by name."""
    rows = []
    groups = sorted(c[len("exposure_"):] for c in exposure.columns if c.startswith("exposure_"))
    for _, row in exposure.loc[exposure["convention"] == convention].iterrows():
        values = pd.Series({g: float(row[f"exposure_{g}"]) for g in groups}).dropna()
        if values.empty:
            continue
        ordered = values.iloc[np.lexsort((np.arange(len(values)), -values.to_numpy()))]
        rows.append({"encoder": row["encoder"], "setting": row["setting"],
                     "distance": row.get("distance", np.nan), "group": ordered.index[0],
                     "exposure": float(ordered.iloc[0]),
                     "runner_up": ordered.index[1] if len(ordered) > 1 else "",
                     "runner_up_exposure": float(ordered.iloc[1]) if len(ordered) > 1 else np.nan})
    return pd.DataFrame(rows, columns=["encoder", "setting", "distance", "group", "exposure",
                                       "runner_up", "runner_up_exposure"])
