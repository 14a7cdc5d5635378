"""The detectors themselves: what trained each one (and how it started, from the protocol
card: flagged where it departs from its paper's ImageNet start), its twins (detectors whose
settings differ in one key only: ``balanced`` (and epochs), ``augment``), FairFD Table 4
(standard versus balanced
twin) and the train-on x test-on generalization table (families differing only in
``train_dataset``)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.forgery import training_methods
from fairforge.metrics.detection import detection_metrics
from fairforge.perturb import CLEAN
from fairforge.recipes import NOT_PAPER_INIT
from fairforge.samples import REAL
from fairforge.tables.predictions import evaluation_rows

# Settings that say where and how fast a model was trained, not what was trained (and the
# detector's own name, which every detector's settings carry).
RUNTIME_SETTINGS = ("threads", "device", "num_workers", "detector")
#: The generalization table's mean rows and column.
AVERAGE = "average"
#: A detector whose best validation AUC stays under this is not trained enough to judge (the
#: default of the config's ``metrics.min_val_auc``; docs/metrics.md section 11).
TRAINED_ENOUGH_AUC = 0.7


def checkpoint_val_auc(path: str | Path | None) -> float:
    """The best validation AUC a checkpoint records (NaN: imported, external, or none)."""
    import torch

    if path is None or not Path(path).is_file():
        return float("nan")
    payload = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    value = payload.get("val_auc") if isinstance(payload, dict) else None
    return float("nan") if value is None else float(value)


def detector_settings_table(
    checkpoints: Mapping[str, str | Path],
    fallback: Mapping[str, Mapping] | None = None,
    train_datasets: Mapping[str, str] | None = None,
) -> dict[str, dict]:
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


def find_twins(
    settings: Mapping[str, Mapping], key: str, base_value, twin_value, also: Iterable[str] = ()
) -> list[tuple[str, str]]:
    """Pairs ``(base, twin)`` of detectors whose settings differ only in ``key`` (and, if
    at all, in the keys ``also``), with ``key`` equal to ``base_value`` and to
    ``twin_value`` (or, when callable, a value it accepts); runtime settings are ignored."""
    is_twin = twin_value if callable(twin_value) else (lambda value: value == twin_value)
    ignored = [key, *also]
    pairs = []
    for a, b in itertools.permutations(sorted(settings), 2):
        sa, sb = settings[a], settings[b]
        if (
            sa.get(key) == base_value
            and is_twin(sb.get(key))
            and _comparable(sa, ignored) == _comparable(sb, ignored)
        ):
            pairs.append((a, b))
    return pairs


def balanced_twins(settings: Mapping[str, Mapping]) -> list[tuple[str, str]]:
    """Standard and balanced detectors otherwise alike (``balanced`` true or by subjects),
    their epochs allowed to differ: FairFD doubles them for its smaller balanced set
    (§5.3.1)."""
    return find_twins(settings, "balanced", False, bool, also=("epochs",))


def balanced_text(value) -> object:
    """A ``balanced`` setting as the detectors table shows it."""
    if isinstance(value, Mapping):
        groups = value.get("groups")
        return f"{value['subjects']} subjects per group" + (
            f" of {', '.join(groups)}" if groups else ""
        )
    return value


def sdaug_twins(settings: Mapping[str, Mapping]) -> list[tuple[str, str]]:
    return find_twins(settings, "augment", "none", "sdaug")


DETECTOR_COLUMNS = [
    "arch",
    "train_dataset",
    "train_methods",
    "augment",
    "balanced",
    "epochs",
    "batch_size",
    "lr",
    "input_size",
]


def card_starts(protocol: pd.DataFrame) -> dict[str, str]:
    """Per detector of the protocol card (``protocol.csv``), how it started (``init``),
    with :data:`~fairforge.recipes.NOT_PAPER_INIT` in brackets where the card flags it."""
    rows = protocol.loc[(protocol["section"] == "detector") & (protocol["key"] == "init")]
    return {
        str(name): str(value if isinstance(value, str) else "")
        + (f" ({NOT_PAPER_INIT})" if NOT_PAPER_INIT in str(source) else "")
        for name, value, source in zip(rows["name"], rows["value"], rows["source"])
    }


def detectors_frame(
    settings: Mapping[str, Mapping],
    val_aucs: Mapping[str, float] | None = None,
    min_val_auc: float = TRAINED_ENOUGH_AUC,
    starts: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One row per detector: what trained it, and the detector it is the SDAug or balanced
    twin of (empty when none); with ``val_aucs``, its best validation AUC and whether it is
    ``trained_enough`` to judge (AUC >= ``min_val_auc``; empty when unknown); with
    ``starts`` (:func:`card_starts`), how it started, after its architecture (``init``)."""
    sdaug = {t: b for b, t in sdaug_twins(settings)}
    balanced = {t: b for b, t in balanced_twins(settings)}
    rows = []
    for name in sorted(settings):
        s = settings[name]
        row = {"detector": name}
        for col in DETECTOR_COLUMNS:
            value = balanced_text(s.get(col)) if col == "balanced" else s.get(col)
            row[col] = ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else value
        if starts is not None:
            row["init"] = starts.get(name, "")
        row["sdaug_twin_of"] = sdaug.get(name, "")
        row["balanced_twin_of"] = balanced.get(name, "")
        if val_aucs is not None:
            value = float(val_aucs.get(name, float("nan")))
            row["val_auc"] = value
            row["trained_enough"] = "" if value != value else bool(value >= min_val_auc)
        rows.append(row)
    extra = ["val_auc", "trained_enough"] if val_aucs is not None else []
    described = list(DETECTOR_COLUMNS)
    if starts is not None:
        described.insert(described.index("arch") + 1, "init")
    return pd.DataFrame(
        rows,
        columns=["detector", *described, "sdaug_twin_of", "balanced_twin_of", *extra],
    )


def undertrained(detectors: pd.DataFrame) -> list[str]:
    """Detectors of :func:`detectors_frame` flagged as not trained enough to judge."""
    if "trained_enough" not in detectors.columns:
        return []
    flag = detectors["trained_enough"].astype(str).str.lower()
    return detectors.loc[flag == "false", "detector"].tolist()


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
    columns = [
        "dataset",
        "detector",
        "balanced_detector",
        "metric",
        "standard",
        "balanced",
        "change",
    ]
    rows = []
    for base, twin in pairs:
        if base not in fairness.columns or twin not in fairness.columns:
            continue
        rows.append(
            pd.DataFrame(
                {
                    "dataset": fairness["dataset"],
                    "detector": base,
                    "balanced_detector": twin,
                    "metric": fairness["metric"],
                    "standard": fairness[base].astype(float),
                    "balanced": fairness[twin].astype(float),
                    "change": fairness[twin].astype(float) - fairness[base].astype(float),
                }
            )
        )
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)


def training_families(
    settings: Mapping[str, Mapping], differing: Sequence[str] = ("train_dataset",)
) -> list[list[str]]:
    """Detectors grouped into families whose settings differ only in ``differing`` (by
    default ``train_dataset``; singletons included), each ordered by training dataset;
    families by their first name."""
    families: dict[str, list[str]] = {}
    for name in sorted(settings):
        key = repr(sorted(_comparable(settings[name], differing).items()))
        families.setdefault(key, []).append(name)
    return [
        sorted(members, key=lambda d: (str(settings[d].get("train_dataset")), d))
        for members in families.values()
    ]


def generalization_table(
    detection: pd.DataFrame,
    settings: Mapping[str, Mapping],
    metric: str = "AUC",
    variant: str = CLEAN,
) -> pd.DataFrame:
    """Train-on x test-on ``metric`` (Benchmark paper Table 5), one block per detector family.

    A family is a set of detectors whose settings differ only in ``train_dataset``; it is
    named after its first member. Rows: one per detector (its training dataset, ``a+b`` when
    pooled), then an ``average`` row (mean over the family's training datasets); after the
    families, one row per training dataset with family and detector ``average``: the mean
    over every detector trained on it (the average per training set). Columns: each test
    dataset, then ``average`` (mean over test datasets, in-domain included). With a single
    dataset the table holds one ``note``.
    """
    frame = detection.loc[
        (detection["variant"] == variant) & (detection.get("unit", "frame") == "frame")
    ]
    datasets = sorted(frame["dataset"].unique())
    if len(datasets) < 2:
        return pd.DataFrame(
            {
                "note": [
                    f"one dataset configured ({', '.join(datasets) or 'none'}): no cross-dataset "
                    "generalization to measure; configure two or more datasets"
                ]
            }
        )
    values = frame.pivot_table(
        index="detector", columns="dataset", values=metric, aggfunc="first"
    ).reindex(columns=datasets)
    blocks = []
    for members in training_families(settings):
        block = values.reindex(members)
        block.insert(0, "train_dataset", [settings[d].get("train_dataset") for d in members])
        block.insert(0, "family", members[0])
        block["average"] = block[datasets].mean(axis=1)
        avg = block[datasets + ["average"]].mean(axis=0)
        block.loc["average"] = pd.Series({"family": members[0], "train_dataset": "average", **avg})
        blocks.append(block.rename_axis("detector").reset_index())
    table = pd.concat(blocks, ignore_index=True)
    members = table.loc[table["detector"] != AVERAGE]
    per_train = (
        members.groupby("train_dataset", sort=True)[[*datasets, AVERAGE]].mean().reset_index()
    )
    per_train.insert(0, "detector", AVERAGE)
    per_train.insert(0, "family", AVERAGE)
    table = pd.concat([table, per_train], ignore_index=True)
    return table[["family", "detector", "train_dataset", *datasets, AVERAGE]]


#: The commonly trained average of :func:`in_domain_table` (``metrics.average_excludes``).
AVERAGE_COMMON = "average_common"


def training_set(
    datasets: Sequence[str], train_methods: Iterable[str], own: Sequence[str]
) -> tuple[str, list[str]]:
    """What a detector trained on, as a column of :func:`in_domain_table`, and the fake
    methods of its test split that belong to it. ``own``: the fake methods of ``datasets``'
    test split (made for training ones excluded). A detector that trains on some of them
    only is named ``dataset/method+method`` and tested on those (Benchmark Table 4's
    FF++/DF); one that trains on all of them, or on none (fakes it makes from the real
    faces: FWA, Face X-ray), is named by its dataset(s) and tested on all."""
    label = "+".join(datasets)
    chosen = [m for m in own if m in set(train_methods)]
    if not chosen or len(chosen) == len(own):
        return label, list(own)
    return f"{label}/{'+'.join(chosen)}", chosen


def in_domain_table(
    preds: pd.DataFrame,
    settings: Mapping[str, Mapping],
    datasets: Sequence[str],
    metric: str = "AUC",
    average_excludes: Sequence[str] = (),
    split: str | None = "test",
) -> pd.DataFrame:
    """Benchmark Table 4: each detector tested on the test split of what it trained on
    (:func:`training_set`: its dataset, or the manipulations of it it trained on), one row
    per family of detectors that differ only in ``train_dataset`` and ``train_methods``
    (named after its first member by name, with its ``arch``), one column per training set (in the
    order of ``datasets``, a dataset before its manipulations), ``metric`` on clean frames.

    A detector that trains on none of its dataset's own fakes (FWA, Face X-ray: fakes made
    from the real faces) has the same training set for every manipulation of that dataset,
    so it also fills its family's cells of those manipulations' columns. ``average``: the
    mean over the row's training sets, a dataset split into manipulations counted by them
    (the paper's FF++/DF, FF++/FS, FF++/FShifter, not FF++ pooled); with
    ``average_excludes``, ``average_common`` leaves those datasets out (the paper's
    parentheses: without DFDC and ForgeryNet).

    ``preds``: clean predictions with at least each detector's rows on its own training
    datasets; ``settings``: each detector's ``arch``, ``train_dataset`` ('a' or 'a+b') and
    ``train_methods``."""
    generated = set(training_methods())
    scored = evaluation_rows(preds, split)
    scored = scored.loc[~scored["method"].isin(generated)]
    cells: dict[tuple[str, str], float] = {}
    columns: dict[str, str] = {}  # label -> its dataset(s)
    fills: list[tuple[str, str, pd.DataFrame]] = []

    def score(part: pd.DataFrame, methods: Sequence[str]) -> float:
        rows = part.loc[part["method"].isin([REAL, *methods])]
        if rows["label"].nunique() < 2:
            return float("nan")
        return float(detection_metrics(rows["label"], rows["score"])[metric])

    families = [sorted(f) for f in training_families(settings, ("train_dataset", "train_methods"))]
    family_of = {name: members[0] for members in families for name in members}
    for name in sorted(settings):
        on = str(settings[name].get("train_dataset", "")).split("+")
        data = scored.loc[scored["dataset"].isin(on)]
        part = data.loc[data["detector"] == name]
        if part.empty:
            continue
        own = sorted(set(data["method"].astype(str)) - {REAL})
        methods = list(settings[name].get("train_methods") or [])
        label, tested = training_set(on, methods, own)
        columns.setdefault(label, "+".join(on))
        cells[(family_of[name], label)] = score(part, tested)
        if not set(methods) & set(own):
            fills.append((family_of[name], "+".join(on), part))
    for family, dataset, part in fills:
        for label, source in list(columns.items()):
            if source == dataset and label != dataset and (family, label) not in cells:
                cells[(family, label)] = score(part, label.split("/", 1)[1].split("+"))

    def order(label: str) -> tuple:
        first = columns[label].split("+")[0]
        rank = list(datasets).index(first) if first in datasets else len(datasets)
        return (rank, columns[label], label != columns[label], label)

    labels = sorted(columns, key=order)
    split_up = {columns[c] for c in labels if c != columns[c]}
    averaged = [c for c in labels if c != columns[c] or c not in split_up]
    common = [c for c in averaged if not set(columns[c].split("+")) & set(average_excludes)]
    rows = []
    for members in families:
        family = members[0]
        values = {c: cells.get((family, c), float("nan")) for c in labels}
        if all(np.isnan(v) for v in values.values()):
            continue
        row = {"family": family, "arch": settings[family].get("arch", family), **values}
        row[AVERAGE] = np.nanmean([values[c] for c in averaged]) if averaged else np.nan
        if average_excludes:
            kept = [values[c] for c in common if not np.isnan(values[c])]
            row[AVERAGE_COMMON] = float(np.mean(kept)) if kept else np.nan
        rows.append(row)
    extra = [AVERAGE, AVERAGE_COMMON] if average_excludes else [AVERAGE]
    return pd.DataFrame(rows, columns=["family", "arch", *labels, *extra])


def detector_studies(
    models: Sequence[str],
    detectors: Sequence[str],
    fallback: Mapping,
    train_datasets: Mapping,
    fairness: pd.DataFrame,
    detection: pd.DataFrame,
    min_val_auc: float = TRAINED_ENOUGH_AUC,
    protocol: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The detectors' settings table (trained enough: best validation AUC >= ``min_val_auc``;
    with the ``protocol`` card, how each started), the balanced-training table and the
    generalization table. ``models``: the checkpoint paths (``.../{detector}/model.pt``);
    detectors without one (score files) take their settings from ``fallback``, the config."""
    by_name = {Path(path).parent.name: path for path in models}
    settings = detector_settings_table(
        {name: by_name.get(name) for name in detectors},
        fallback=fallback,
        train_datasets=train_datasets,
    )
    val_aucs = {name: checkpoint_val_auc(by_name.get(name)) for name in detectors}
    return (
        detectors_frame(
            settings,
            val_aucs,
            min_val_auc,
            None if protocol is None else card_starts(protocol),
        ),
        balanced_table(fairness, balanced_twins(settings)),
        generalization_table(detection, settings),
    )
