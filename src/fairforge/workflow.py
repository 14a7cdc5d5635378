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

RESULTS = "results"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")
SYNTHETIC_DEFAULTS = {"subjects_per_group": 8, "images_per_subject": 10, "size": 400,
                      "tones": ["tone1", "tone2", "tone3", "tone4"],
                      "genders": ["female", "male"]}


def synthetic_options(dataset_cfg: dict) -> dict:
    return {**SYNTHETIC_DEFAULTS, **dataset_cfg.get("options", {})}


def dataset_root(name: str, dataset_cfg: dict) -> Path:
    """Where a dataset's source paths are relative to (the renderer's folder for synthetic)."""
    if dataset_cfg["adapter"] == "synthetic":
        return Path(RESULTS) / name / "source_images"
    if dataset_cfg["adapter"] in ("synthetic_video", "video"):
        return Path(RESULTS) / name / "video_source"  # sampled frames are written here
    if "root" not in dataset_cfg:
        raise ValueError(f"config: datasets.{name}: 'root' is required for adapter "
                         f"{dataset_cfg['adapter']!r}")
    root = Path(dataset_cfg["root"])
    return root.parent if dataset_cfg["adapter"] == "csv" else root


def count_source_items(name: str, dataset_cfg: dict) -> int:
    """How many source images a dataset has, cheaply (no decoding), to plan shards."""
    adapter = dataset_cfg["adapter"]
    if adapter == "synthetic":
        o = synthetic_options(dataset_cfg)
        return (len(o["tones"]) * len(o["genders"]) * int(o["subjects_per_group"])
                * int(o["images_per_subject"]))
    if adapter in ("synthetic_video", "video"):
        from fairforge.video.frames import planned_frame_count
        options = dataset_cfg.get("options", {})
        labels = Path(dataset_cfg.get("root", "")) / options.get("labels", "labels.csv")
        return planned_frame_count(adapter, options, labels)
    root = Path(dataset_cfg.get("root", ""))
    if adapter == "csv":
        if not root.is_file():
            raise FileNotFoundError(f"config: datasets.{name}.root: csv not found: {root}")
        with open(root, "rb") as fh:
            return max(0, sum(1 for _ in fh) - 1)
    if adapter == "fairface":
        labels = dataset_cfg.get("options", {}).get("labels")
        if labels:
            with open(Path(root) / labels if not Path(labels).is_absolute() else labels,
                      "rb") as fh:
                return max(0, sum(1 for _ in fh) - 1)
    if not root.is_dir():
        raise FileNotFoundError(f"config: datasets.{name}.root: folder not found: {root}")
    return sum(1 for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)


def shard_ids(n_items: int, shard_size: int) -> list[str]:
    n = max(1, math.ceil(n_items / shard_size))
    width = max(3, len(str(n - 1)))
    return [f"{i:0{width}d}" for i in range(n)]


def shard_slice(frame: pd.DataFrame, shard: str, shard_size: int) -> pd.DataFrame:
    """Rows of shard ``shard`` (sources are sorted by image_id, so shards are stable)."""
    start = int(shard) * shard_size
    return frame.iloc[start:start + shard_size]


def faces_with_attributes(sources: pd.DataFrame, faces: pd.DataFrame) -> pd.DataFrame:
    """Faces joined with their subject, group, split and every source attribute as a column."""
    import json

    meta = sources[["image_id", "subject_id", "group", "split"]].copy()
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
    so that editing one operation's options reruns only its own jobs."""
    ops = variant.split("@")[0].split("+")
    return {op: opts for op, opts in config["variant_options"].items() if op in ops}


def train_dataset(config: dict, name: str) -> str:
    return config["detectors"][name].get("train_dataset") or next(iter(config["datasets"]))


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
