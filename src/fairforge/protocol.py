"""The protocol card: what a config trains, detector by detector, and where each value comes
from, so that every published table carries the protocol that made it.

For every detector the card gives :data:`DETECTOR_KEYS` (its architecture, its start, the
optimizer and schedule, epochs, early stopping, batch, input size, frames per video, the
augmentation, SAM, what it trains on) and ``sources``: per key, its origin: a paper section
(``paper:Benchmark App. A``), a named recipe (``recipe:deepfakebench``), the ``config``, the
fairforge ``default``, or ``unstated, fairforge default`` where the paper a recipe cites
leaves the value open (``unstated, recipe:<name>`` where another recipe gives it). For every
dataset it gives :data:`DATASET_KEYS`. The training values are resolved once, by
:func:`fairforge.workflow.detector_protocol` (the settings the training rule passes), the
start by :func:`fairforge.detectors.pretrained.resolve_start` (what training starts from);
this module only lays them out.

``python -m fairforge protocol --configfile CONFIG [MORE ...]`` prints it (config files
layered as the Snakefile layers them: the first replaces ``config.yaml``, the others merge
over it in order, then ``select:``); the workflow writes it as ``results/protocol.csv``
(:func:`card_frame`) and the report shows it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import yaml

from fairforge.config import validate_config
from fairforge.detectors.base import DETECTORS
from fairforge.detectors.pretrained import resolve_start
from fairforge.optimizers import SCHEDULES
from fairforge.recipes import CONFIG, DEFAULT, NOT_PAPER_INIT, UNSTATED, unstated_recipe
from fairforge.sources import ADAPTERS
from fairforge.workflow import (
    dataset_split,
    detector_protocol,
    is_external,
    select_config,
    train_datasets,
    trains,
)

#: The card's keys for a detector, in order (JSON: these and ``sources``).
DETECTOR_KEYS = (
    "detector",
    "arch",
    "init",
    "pretrained",
    "optimizer",
    "lr",
    "betas",
    "weight_decay",
    "schedule",
    "epochs",
    "early_stopping",
    "batch_size",
    "input_size",
    "frames_train",
    "frames_test",
    "augment",
    "sam",
    "train_datasets",
    "train_methods",
)
#: The keys a recipe gives (the others say what is trained and from where).
RECIPE_CARD_KEYS = DETECTOR_KEYS[4:17]
#: The card's keys for a dataset.
DATASET_KEYS = ("name", "adapter", "split", "frames", "groups", "options")
#: Adapter options that are local paths, not part of a protocol.
PATH_OPTIONS = (
    "splits",
    "targets",
    "vidtimit",
    "attributes",
    "labels",
    "test_list",
    "image_list",
    "video_list",
)
#: The long form of the card (``results/protocol.csv``): one row per value.
CARD_COLUMNS = ("section", "name", "key", "value", "source")
FORMATS = ("table", "csv", "json", "markdown")


# ----------------------------------------------------------------------- the config


def layered_config(paths: Sequence[str | Path]) -> dict:
    """The config a run of ``snakemake --configfile PATHS`` uses: the files merged in order
    (Snakemake's own merge: mappings key by key, anything else replaced), validated, and
    ``select:`` applied (:func:`fairforge.workflow.select_config`)."""
    from snakemake.utils import update_config

    config: dict = {}
    for path in paths:
        with open(path) as fh:
            update_config(config, yaml.safe_load(fh) or {})
    return select_config(validate_config(config))


# ----------------------------------------------------------------------- detectors


def _joined(*sources: str) -> str:
    return "; ".join(dict.fromkeys(s for s in sources if s))


def schedule_text(values: dict) -> str:
    """The learning-rate schedule of resolved recipe ``values`` in words."""
    kind = values["schedule"]
    words = SCHEDULES.metadata(kind).get("words")
    text = words(values) if words else kind
    if values["warmup_epochs"]:
        text += f", after {values['warmup_epochs']} warm-up epochs"
    return text


#: The recipe keys each card key is made of (its source joins theirs).
_PARTS = {
    "schedule": {
        "step": ("schedule", "gamma", "step_size", "warmup_epochs"),
        "multistep": ("schedule", "gamma", "milestones", "warmup_epochs"),
        "linear_decay": ("schedule", "decay_start", "warmup_epochs"),
    },
    "early_stopping": ("patience",),
    "batch_size": ("batch_size", "balanced_batches"),
    "augment": ("augment", "augment_prob", "augment_warmup"),
    "sam": ("sam", "sam_rho"),
    "optimizer": ("optimizer",),
}


def _parts_source(key: str, values: dict, sources: dict) -> str:
    """The source of a card key made of several recipe keys (those in use): each differing
    origin once, a part's origin named after it when it is not the main key's."""
    parts = _PARTS.get(key, (key,))
    if key == "schedule":
        parts = parts.get(values["schedule"], ("schedule", "warmup_epochs"))
    unused = {"augment": values["augment"] == "none", "sam": not values["sam"]}
    unused["batch_size"] = not values["balanced_batches"]
    if unused.get(key):
        parts = (key,)
    main = sources[parts[0]]
    extra = [
        f"{part}: {sources[part]}"
        for part in parts[1:]
        if sources[part] != main and (part != "warmup_epochs" or values["warmup_epochs"])
    ]
    return _joined(main, *extra)


def _recipe_values(values: dict, sources: dict, arch: str) -> tuple[dict, dict]:
    """The card's recipe keys from resolved recipe ``values`` (and their ``sources``)."""
    entry = DETECTORS.get(arch)
    size = values["input_size"]
    size_source = sources["input_size"]
    if size is None:
        size = getattr(entry, "default_input_size", None)
        size_source = _joined(size_source, "the architecture's default")
    batch = values["batch_size"]
    if values["balanced_batches"]:
        batch = f"{batch} = {batch // 2} real + {batch // 2} fake"
    augment = values["augment"]
    if augment != "none":
        augment = f"{augment} (p {values['augment_prob']:g}"
        if values["augment_warmup"]:
            augment += f", from epoch {values['augment_warmup'] + 1}"
        augment += ")"
    card = {
        "optimizer": values["optimizer"]
        + (f" (momentum {values['momentum']:g})" if values["optimizer"] == "sgd" else ""),
        "lr": values["lr"],
        "betas": list(values["betas"]),
        "weight_decay": values["weight_decay"],
        "schedule": schedule_text(values),
        "epochs": values["epochs"],
        "early_stopping": values["patience"],
        "batch_size": batch,
        "input_size": size,
        "frames_train": values["frames_train"],
        "frames_test": values["frames_test"],
        "augment": augment,
        "sam": f"rho {values['sam_rho']:g}" if values["sam"] else False,
    }
    out_sources = {key: _parts_source(key, values, sources) for key in card}
    out_sources["input_size"] = size_source
    if values["optimizer"] == "sgd" and sources["momentum"] != sources["optimizer"]:
        out_sources["optimizer"] = _joined(
            out_sources["optimizer"], f"momentum: {sources['momentum']}"
        )
    return card, out_sources


def detector_card(config: dict, name: str) -> dict:
    """One detector's row of the card: :data:`DETECTOR_KEYS` and ``sources``."""
    det = config["detectors"][name]
    arch = det.get("arch", name)
    kind = "external" if is_external(config, name) else DETECTORS.metadata(arch)["kind"]
    card = {"detector": name, "arch": arch if kind != "external" else None}
    sources = {"detector": CONFIG, "arch": CONFIG if "arch" in det else f"{DEFAULT} (its name)"}
    if kind == "external":
        why = "n/a: an external detector's scores are read from a file"
        card.update(dict.fromkeys(DETECTOR_KEYS[2:]))
        sources.update(dict.fromkeys(DETECTOR_KEYS[2:], why))
        return {**card, "sources": sources}
    settings, recipe_sources = detector_protocol(config, name)
    init = det.get("init")
    imported = "checkpoint" in det and init != "checkpoint"
    if kind == "network":
        start = resolve_start(arch, init, det.get("pretrained"), det.get("checkpoint"))
        card["init"] = start.init
        sources["init"] = _joined(
            start.source,
            start.note,
            "no weights configured: training stops (give pretrained, or init: random)"
            if start.missing
            else "",
        )
    else:
        card["init"] = None
        sources["init"] = f"n/a: a {kind} detector"
    card["pretrained"] = det.get("pretrained")
    sources["pretrained"] = CONFIG if "pretrained" in det else DEFAULT
    values, value_sources = _recipe_values(settings, recipe_sources, arch)
    if kind == "network" and not imported:
        card.update(values)
        sources.update(value_sources)
    else:
        why = (
            "n/a: not trained, its weights are imported"
            if imported
            else f"n/a: a {kind} detector trains by no recipe"
        )
        card.update(dict.fromkeys(RECIPE_CARD_KEYS))
        sources.update(dict.fromkeys(RECIPE_CARD_KEYS, why))
        if not imported or kind == "network":  # frames_test: how it scores a video
            card["frames_test"] = values["frames_test"]
            sources["frames_test"] = value_sources["frames_test"]
    if trains(config, name):
        card["train_datasets"] = train_datasets(config, name)
        sources["train_datasets"] = CONFIG if det.get("train_dataset") else "default (the first)"
        card["train_methods"] = list(settings["train_methods"])
        sources["train_methods"] = CONFIG if "train_methods" in det else "training.train_methods"
    else:
        card["train_datasets"] = card["train_methods"] = None
        sources["train_datasets"] = sources["train_methods"] = "n/a: not trained"
    return {**{k: card[k] for k in DETECTOR_KEYS}, "sources": sources}


# ----------------------------------------------------------------------- datasets


def dataset_card(config: dict, name: str) -> dict:
    """One dataset's row of the card: :data:`DATASET_KEYS` and ``sources``."""
    block = config["datasets"][name]
    options = dict(block.get("options") or {})
    adapter = ADAPTERS.get(block["adapter"])
    groups = list(block.get("group_by") or adapter.default_group_by)
    card = {
        "name": name,
        "adapter": block["adapter"],
        "split": dataset_split(config, name),
        "frames": options.get("frames_per_video"),
        "groups": groups,
        "options": {
            k: v
            for k, v in sorted(options.items())
            if k not in PATH_OPTIONS and k != "frames_per_video"
        }
        or None,
    }
    sources = {
        "name": CONFIG,
        "adapter": CONFIG,
        "split": CONFIG if "split" in block else CONFIG + " (split:)",
        "frames": CONFIG if "frames_per_video" in options else DEFAULT,
        "groups": CONFIG if block.get("group_by") else f"{DEFAULT} (the adapter's)",
        "options": CONFIG if card["options"] else DEFAULT,
    }
    return {**card, "sources": sources}


# ----------------------------------------------------------------------- the card


def protocol_card(config: dict) -> dict:
    """The card of a validated config: ``{"detectors": [...], "datasets": [...]}``."""
    return {
        "detectors": [detector_card(config, name) for name in config["detectors"]],
        "datasets": [dataset_card(config, name) for name in config["datasets"]],
    }


def value_text(value) -> str:
    """A card value as one cell of text: empty for none, JSON for lists and mappings."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def card_frame(card: dict) -> pd.DataFrame:
    """The card in long form (:data:`CARD_COLUMNS`): one row per detector's or dataset's
    value, with its source; what the workflow writes as ``results/protocol.csv``."""
    rows = []
    for section, keys, first in (
        ("detector", DETECTOR_KEYS, "detector"),
        ("dataset", DATASET_KEYS, "name"),
    ):
        for item in card[f"{section}s"]:
            for key in keys[1:]:
                rows.append(
                    {
                        "section": section,
                        "name": item[first],
                        "key": key,
                        "value": value_text(item[key]),
                        "source": item["sources"][key],
                    }
                )
    return pd.DataFrame(rows, columns=list(CARD_COLUMNS))


def card_text(card: dict) -> str:
    """The card for a terminal: per detector and dataset, one line per value and source."""
    lines = []
    for section, keys, first in (
        ("detector", DETECTOR_KEYS, "detector"),
        ("dataset", DATASET_KEYS, "name"),
    ):
        for item in card[f"{section}s"]:
            lines.append(f"{section} {item[first]}")
            width = max(len(k) for k in keys)
            for key in keys[1:]:
                text = value_text(item[key]) or "-"
                lines.append(f"  {key:<{width}}  {text:<40}  {item['sources'][key]}")
            lines.append("")
    return "\n".join(lines)


#: The columns of the markdown table of docs/papers.md, by card key.
MARKDOWN_COLUMNS = (
    "arch",
    "init",
    "optimizer",
    "lr",
    "batch_size",
    "schedule",
    "epochs",
    "early_stopping",
    "input_size",
    "frames_train",
    "frames_test",
    "augment",
    "train_datasets",
)


def unstated_text(sources: dict) -> str:
    """The keys whose values a detector's paper leaves open, from their ``sources``: those
    that are fairforge defaults, then those a named recipe gives, e.g. ``early_stopping;
    betas, weight_decay (recipe:deepfakebench)``."""
    parts = [", ".join(k for k in DETECTOR_KEYS if UNSTATED in sources[k])]
    by_recipe: dict[str, list[str]] = {}
    for key in DETECTOR_KEYS:
        recipe = unstated_recipe(sources[key])
        if recipe:
            by_recipe.setdefault(recipe, []).append(key)
    parts += [f"{', '.join(keys)} (recipe:{recipe})" for recipe, keys in by_recipe.items()]
    return "; ".join(p for p in parts if p) or "-"


def card_markdown(card: dict) -> str:
    """The detectors of the card as a markdown table (docs/papers.md's protocol blocks): one
    row per protocol, detectors that differ only in their training datasets on one row
    (named after the first, ``+N`` the others), with the keys the paper leaves unstated; a
    start that departs from the paper is marked."""
    rows: dict[tuple, dict] = {}
    for item in card["detectors"]:
        cells = []
        for key in MARKDOWN_COLUMNS[:-1]:
            text = value_text(item[key]) or "-"
            if key == "init" and NOT_PAPER_INIT in item["sources"]["init"]:
                text += f" ({NOT_PAPER_INIT})"
            cells.append(text.replace("|", "/"))
        key = (*cells, unstated_text(item["sources"]))
        row = rows.setdefault(key, {"names": [], "datasets": []})
        row["names"].append(item["detector"])
        row["datasets"] += [d for d in item["train_datasets"] or [] if d not in row["datasets"]]
    head = ["detector", *MARKDOWN_COLUMNS, "unstated (fairforge default, or the recipe named)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, row in rows.items():
        name = row["names"][0] + (f" (+{len(row['names']) - 1})" if len(row["names"]) > 1 else "")
        datasets = ", ".join(row["datasets"]) or "-"
        lines.append("| " + " | ".join([name, *key[:-1], datasets, key[-1]]) + " |")
    return "\n".join(lines) + "\n"


def render(card: dict, fmt: str) -> str:
    """The card in ``fmt`` (:data:`FORMATS`)."""
    if fmt == "json":
        return json.dumps(card, indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        return card_frame(card).to_csv(index=False)
    if fmt == "markdown":
        return card_markdown(card)
    if fmt == "table":
        return card_text(card)
    raise ValueError(f"--format must be one of {FORMATS}, got {fmt!r}")
