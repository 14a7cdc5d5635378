"""Glue between the Snakemake rules and the package: shard plans, per-item settings, logs.

Kept here (not in the .smk files) so it is importable and unit-tested.
"""
from __future__ import annotations

import contextlib
import logging
import math
import sys
from pathlib import Path

import pandas as pd

# The video package registers the video adapters on ADAPTERS.
import fairforge.video  # noqa: F401
from fairforge.paths import RESULTS
from fairforge.sources import ADAPTERS, IMAGE_SUFFIXES


def dataset_root(name: str, dataset_cfg: dict) -> Path:
    """Where a dataset's source paths are relative to (where rendered images are written,
    for the adapters that write them)."""
    return ADAPTERS.create(dataset_cfg["adapter"]).resolve_root(name, dataset_cfg, RESULTS)


def count_source_items(name: str, dataset_cfg: dict) -> int:
    """At least how many source images a dataset has, cheaply (no decoding), to plan shards."""
    return ADAPTERS.create(dataset_cfg["adapter"]).count_items(name, dataset_cfg)


def shard_ids(n_items: int, shard_size: int) -> list[str]:
    n = max(1, math.ceil(n_items / shard_size))
    width = max(3, len(str(n - 1)))
    return [f"{i:0{width}d}" for i in range(n)]


def shard_slice(frame: pd.DataFrame, shard: str, shard_size: int) -> pd.DataFrame:
    """Rows of shard ``shard`` (sources are sorted by image_id, so shards are stable)."""
    start = int(shard) * shard_size
    return frame.iloc[start:start + shard_size]


def read_shard(path: str | Path, shard: str, shard_size: int,
               columns: list[str] | None = None) -> pd.DataFrame:
    """Shard ``shard`` of a manifest written with ``row_group_size=shard_size``, read alone."""
    from fairforge.manifest import read_rows

    start = int(shard) * shard_size
    return read_rows(path, start, start + shard_size, columns).reset_index(drop=True)


SOURCE_META = ["image_id", "subject_id", "group", "split"]


def read_forgery_shard(sources: str | Path, faces: str | Path, pairs: str | Path, shard: str,
                       shard_size: int) -> tuple[list[str], pd.DataFrame, pd.DataFrame]:
    """The shard's image ids, their pairs rows, and the faces of them and of their targets
    (which may lie in any shard) with subject, group and split: what one forgery job uses,
    read alone, so its memory follows the shard, not the dataset."""
    from fairforge.forgery.shard import FACE_INPUTS, PAIR_INPUTS
    from fairforge.manifest import read_ids

    ids = read_shard(sources, shard, shard_size, columns=["image_id"])["image_id"].tolist()
    shard_pairs = read_ids(pairs, ids, PAIR_INPUTS, contract="pairs")
    wanted = sorted({*ids, *shard_pairs["target_image_id"].dropna()})
    shard_faces = faces_with_attributes(
        read_ids(sources, wanted, SOURCE_META, contract="sources"),
        read_ids(faces, wanted, FACE_INPUTS, contract="faces"))
    return ids, shard_pairs, shard_faces


def faces_with_attributes(sources: pd.DataFrame, faces: pd.DataFrame) -> pd.DataFrame:
    """Faces joined with their subject, group, split and every source attribute as a column.

    ``sources`` needs :data:`SOURCE_META`; attributes and video columns are joined when
    present, so a stage that uses none of them need not read them.
    """
    import json

    meta = sources[SOURCE_META].copy()
    if "attributes" in sources.columns:
        attrs = pd.DataFrame([json.loads(a) if isinstance(a, str) and a else {}
                              for a in sources["attributes"]], index=sources.index)
        attrs = attrs[[c for c in attrs.columns if c not in meta.columns]]
        meta = pd.concat([meta, attrs], axis=1)
    extra = [c for c in ("video_id", "frame_index") if c in sources.columns]
    meta = pd.concat([meta, sources[extra]], axis=1) if extra else meta
    return faces.merge(meta, on="image_id", how="left", validate="one_to_one")


def detector_settings(config: dict, name: str) -> dict:
    """The resolved training settings of one detector: its block over the shared protocol."""
    det = config["detectors"][name]
    base = config["training"]
    return {
        "arch": det.get("arch", name),
        "model": dict(det.get("model", {})),
        "input_size": det.get("input_size"),
        "train_methods": list(det.get("train_methods", base["train_methods"])),
        "augment": det.get("augment", "none"),
        "balanced": bool(det.get("balanced", False)),
        "epochs": int(det.get("epochs", base["epochs"])),
        "batch_size": int(det.get("batch_size", base["batch_size"])),
        "lr": float(det.get("lr", base["lr"])),
        "weight_decay": float(base["weight_decay"]),
        "num_workers": int(base["num_workers"]),
        "device": config["device"],
        "seed": int(config["seed"]),
    }


def all_variants(config: dict) -> list[str]:
    """``variants`` plus the members of ``variant_suites``, in order, without repeats."""
    from fairforge.perturb import suite
    from fairforge.video import VIDEO_SUITE

    names = list(config["variants"])
    for name in config["variant_suites"]:
        names += VIDEO_SUITE if name == "video" else suite(name, with_clean=False)
    return list(dict.fromkeys(names))


def variant_options(config: dict, variant: str) -> dict:
    """The options (e.g. weights paths) of the operation(s) in one variant, and nothing else,
    so that editing one operation's options reruns only its own jobs.

    ``far_learned`` gets the generator of the ``degradation`` block as its ``weights``;
    keys set under ``variant_options.far_learned`` override it.
    """
    ops = variant.split("@")[0].split("+")
    options = {op: opts for op, opts in config["variant_options"].items() if op in ops}
    weights = degradation_checkpoint(config) if LEARNED_DEGRADATION_OP in ops else None
    if weights:
        options[LEARNED_DEGRADATION_OP] = {"weights": weights,
                                           **options.get(LEARNED_DEGRADATION_OP, {})}
    return options


LEARNED_DEGRADATION_OP = "far_learned"
DEGRADATION_CHECKPOINT = f"{RESULTS}/degradation/high_to_low.pt"
DEGRADATION_SAMPLE_SHEET = f"{RESULTS}/degradation/samples.png"


def trains_degradation(config: dict) -> bool:
    """Whether the workflow trains the high-to-low generator: both folders set, no
    ready checkpoint. One folder without the other is a configuration error."""
    block = config.get("degradation") or {}
    if block.get("checkpoint"):
        return False
    given = [key for key in ("high_dir", "low_dir") if block.get(key)]
    if len(given) == 1:
        missing = "low_dir" if given == ["high_dir"] else "high_dir"
        raise ValueError(f"config: degradation: {given[0]} is set but {missing} is not; "
                         "training the generator needs both (or set checkpoint)")
    return len(given) == 2


def degradation_checkpoint(config: dict) -> str | None:
    """The generator ``far_learned`` uses: the configured checkpoint, else the one the
    workflow trains, else None (the op then reports the default path it expected)."""
    block = config.get("degradation") or {}
    if block.get("checkpoint"):
        return str(block["checkpoint"])
    return DEGRADATION_CHECKPOINT if trains_degradation(config) else None


def degradation_inputs(config: dict, variant: str) -> list[str]:
    """Extra inputs of a prediction job: the trained generator when this variant uses it.

    A configured checkpoint is not an input: when it is missing, the variant is reported as
    unavailable with that path instead of failing the DAG.
    """
    weights = variant_options(config, variant).get(LEARNED_DEGRADATION_OP, {}).get("weights")
    if trains_degradation(config) and weights == DEGRADATION_CHECKPOINT:
        return [DEGRADATION_CHECKPOINT]
    return []


def degradation_images(config: dict, key: str) -> list[str]:
    """The images under ``degradation.<key>`` (a folder), as inputs of the training job.

    Listed file by file because Snakemake dates a folder by its own mtime, which misses a
    face replaced in place. A missing folder is returned as is, so Snakemake names it.
    """
    folder = Path(config["degradation"][key])
    if not folder.is_dir():
        return [str(folder)]
    return sorted(str(p) for p in folder.rglob("*")
                  if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


def degradation_settings(config: dict) -> dict:
    """What trains the generator (its params, so changing any of them retrains it)."""
    block = config["degradation"]
    return {"high_dir": str(block["high_dir"]), "low_dir": str(block["low_dir"]),
            "steps": int(block["steps"]), "batch_size": int(block["batch_size"]),
            "seed": int(config["seed"]), "device": config["device"]}


def is_external(config: dict, name: str) -> bool:
    """An external detector brings its own scores: nothing to train, run or time."""
    return "scores" in config["detectors"][name]


def model_input(config: dict, name: str) -> str:
    """What prediction for a detector reads: its score file, or its (trained) checkpoint."""
    det = config["detectors"][name]
    return det["scores"] if "scores" in det else f"{RESULTS}/models/{name}/model.pt"


def train_input(config: dict, name: str) -> str:
    """What the train rule reads: user weights to import, or the training samples."""
    det = config["detectors"][name]
    return det.get("checkpoint") or f"{RESULTS}/{train_dataset(config, name)}/samples.parquet"


def train_dataset(config: dict, name: str) -> str:
    return config["detectors"][name].get("train_dataset") or next(iter(config["datasets"]))


def trained_encoders(config: dict) -> list[str]:
    """Labels of the ranking encoders that the workflow trains (those with a ``train`` block)."""
    return [label for label, opts in config["ranking"]["encoders"].items() if "train" in opts]


def encoder_checkpoint(label: str) -> str:
    return f"{RESULTS}/encoders/{label}/model.pt"


def ranking_encoders(config: dict) -> dict[str, dict]:
    """Label → ``{"encoder": registered name, **constructor options}`` for the exposure study;
    trained encoders load the checkpoint their rule writes."""
    out = {}
    for label, opts in config["ranking"]["encoders"].items():
        opts = {k: v for k, v in opts.items() if k != "train"}
        opts.setdefault("encoder", label)
        if label in trained_encoders(config):
            opts["checkpoint"] = encoder_checkpoint(label)
        out[label] = opts
    return out


def encoder_training(config: dict, label: str) -> dict:
    """Keyword arguments of :func:`fairforge.encoders.trainable.train_encoder_on_faces` for
    one trained encoder; far-trained encoders see the ranking's distance."""
    opts = config["ranking"]["encoders"][label]
    return {"arch": opts.get("encoder", label), "distance": config["ranking"]["distance"],
            **opts["train"]}


@contextlib.contextmanager
def logged(log_path: str | None):
    """Send logging, stdout and stderr of a script to its rule's log file."""
    if not log_path:
        yield
        return
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        # Per-image work solves many tiny linear systems; multi-threaded BLAS is far slower on
        # those than one thread, and Snakemake already runs jobs in parallel.
        from threadpoolctl import threadpool_limits
        try:
            with threadpool_limits(limits=1, user_api="blas"):
                yield
        except BaseException:
            import traceback
            traceback.print_exc(file=fh)
            raise
        finally:
            root.removeHandler(handler)
            fh.flush()
