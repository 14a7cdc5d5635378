"""How long Snakemake takes to plan (`snakemake -n`) a large dataset, and how many jobs.

A `csv` dataset of N placeholder image paths (nothing is rendered or read: planning only
counts the csv's rows to cut shards) with several forgery methods, detectors and variants. The job
count must grow with shards x methods and detectors x variants x prediction shards x
methods, never with images.

    .venv/bin/python benchmarks/bench_plan.py                 # 10k, 100k, 1M images
    .venv/bin/python benchmarks/bench_plan.py --images 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
METHODS = ["faceswap", "simswap", "fastreen", "dualreen", "maskgan"]
DETECTORS = {
    "meso4": {"arch": "meso4"},
    "xception": {"arch": "patch_xception"},
    "efficientnet_b4": {"arch": "efficientnet_b4"},
}
VARIANTS = ["clean", "jpeg@60", "gaussian_blur@7"]
GROUPS = ["African", "Asian", "Caucasian", "Indian"]
JOB_STATS = re.compile(r"^job\s+count\s*$(.*?)^total\s+(\d+)\s*$", re.M | re.S)


def write_placeholder_csv(path: Path, n_images: int, images_per_subject: int = 10) -> None:
    """``path, subject_id, group`` rows for images that do not exist."""
    with open(path, "w") as fh:
        fh.write("path,subject_id,group\n")
        for start in range(0, n_images, 100_000):
            ids = range(start, min(n_images, start + 100_000))
            fh.write(
                "".join(
                    f"images/{i:07d}.jpg,s{i // images_per_subject:06d},"
                    f"{GROUPS[(i // images_per_subject) % len(GROUPS)]}\n"
                    for i in ids
                )
            )


PREDICT_SHARD_FACTOR = 60  # inference.shard_size = 60 x shard_size (the default ratio)


def plan_config(
    csv_path: Path,
    *,
    shard_size: int = 500,
    methods=METHODS,
    detectors=DETECTORS,
    variants=VARIANTS,
) -> dict:
    return {
        "seed": 0,
        "shard_size": shard_size,
        "inference": {"shard_size": PREDICT_SHARD_FACTOR * shard_size},
        "datasets": {"bench": {"adapter": "csv", "root": str(csv_path)}},
        "forgery": {"methods": list(methods)},
        "training": {"train_methods": list(methods)},
        "detectors": {name: dict(cfg) for name, cfg in detectors.items()},
        "variants": list(variants),
    }


def write_plan_workdir(workdir: Path, n_images: int, **config_kw) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    csv_path = workdir / "images.csv"
    write_placeholder_csv(csv_path, n_images)
    (workdir / "config.yaml").write_text(yaml.safe_dump(plan_config(csv_path, **config_kw)))
    return workdir


def dry_run(workdir: Path, target: str = "all") -> tuple[float, dict[str, int], str]:
    """Seconds of `snakemake -n`, the jobs per rule, and the output."""
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(workdir / "config.yaml"),
        "-n",
        "--quiet",
        "rules",
        "--cores",
        "1",
        target,
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake -n failed:\n{out[-4000:]}")
    return seconds, jobs_per_rule(out), out


def jobs_per_rule(output: str) -> dict[str, int]:
    """The 'Job stats' table of a dry run, as {rule: count} (plus 'total')."""
    match = JOB_STATS.search(output)
    if match is None:
        raise ValueError(f"no job stats in the output:\n{output[-2000:]}")
    counts = {}
    for line in match.group(1).strip().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    counts["total"] = int(match.group(2))
    return counts


def repeated_jobs(
    n_images: int, shard_size: int, n_methods: int, n_detectors: int, n_variants: int
) -> dict[str, int]:
    """Jobs of the rules that repeat, for one image dataset and image (not video) variants.

    Every other rule of `all` runs once per dataset or once per run, i.e. once here.
    """
    shards = max(1, math.ceil(n_images / shard_size))
    predict_shards = max(1, math.ceil(n_images / (PREDICT_SHARD_FACTOR * shard_size)))
    return {
        "sources_shard": shards,
        "faces_shard": shards,
        "forgery_shard": shards * n_methods,
        "forgery": n_methods,
        "forgery_quality_fakes": n_methods,
        "method_samples": n_methods + 1,  # and the real crops
        "train": n_detectors,
        "embed_shard": shards,  # the default ranking: one encoder
        # per method and the real crops: a new method adds jobs and reruns none
        "predict": n_detectors * n_variants * predict_shards * (n_methods + 1),
        "predictions": n_detectors * n_variants,
    }


def single_jobs(counts: dict[str, int], repeated: dict[str, int]) -> dict[str, int]:
    """The rules of a plan outside ``repeated`` (each should run once)."""
    return {rule: n for rule, n in counts.items() if rule not in repeated and rule != "total"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--shard-size", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1, help="report the fastest of N")
    args = parser.parse_args()
    print(
        f"{len(METHODS)} methods, {len(DETECTORS)} detectors, {len(VARIANTS)} variants, "
        f"shard_size {args.shard_size}"
    )
    print(f"{'images':>9} {'shards':>7} {'jobs':>7} {'formula':>7} {'plan s':>7} {'ms/job':>7}")
    with tempfile.TemporaryDirectory(prefix="bench_plan_") as tmp:
        for n in args.images:
            workdir = write_plan_workdir(Path(tmp) / str(n), n, shard_size=args.shard_size)
            times = []
            for _ in range(args.repeat):
                seconds, counts, _ = dry_run(workdir)
                times.append(seconds)
            repeated = repeated_jobs(
                n, args.shard_size, len(METHODS), len(DETECTORS), len(VARIANTS)
            )
            formula = sum(repeated.values()) + len(single_jobs(counts, repeated))
            best = min(times)
            print(
                f"{n:>9} {repeated['faces_shard']:>7} {counts['total']:>7} {formula:>7} "
                f"{best:>7.2f} {1000 * best / counts['total']:>7.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
