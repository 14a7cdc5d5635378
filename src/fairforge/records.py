"""Run records under ``results/pipeline_info``: versions, the resolved config, the rule graph.

What a reader of a results folder needs to reproduce it: which code (git commit), which
packages, which accelerator stack, and exactly which settings (defaults filled in).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import subprocess
import sys
from operator import attrgetter
from pathlib import Path

import yaml

from fairforge import __version__

PACKAGES = (
    "torch",
    "torchvision",
    "timm",
    "snakemake",
    "snakemake-executor-plugin-slurm",
    "dlib-bin",
    "face-recognition-models",
    "opencv-python-headless",
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "scikit-learn",
    "fairlearn",
    "onnxruntime",
    "imageio-ffmpeg",
    "matplotlib",
)


def config_hash(config: dict) -> str:
    text = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(text).hexdigest()[:16]


def git_commit(repo: str | Path) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if out.returncode != 0:
        return "unknown"
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def versions(repo: str | Path, config: dict) -> dict:
    import torch

    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "fairforge": __version__,
        "git_commit": git_commit(repo),
        "config_sha256_16": config_hash(config),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch_cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "packages": packages,
    }


def write_run_records(out_dir: str | Path, repo: str | Path, config: dict) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "versions.yml", "w") as fh:
        yaml.safe_dump(versions(repo, config), fh, sort_keys=False)
    with open(out / "config.resolved.yaml", "w") as fh:
        yaml.safe_dump(config, fh, sort_keys=False)


def write_rule_graph(out_path: str | Path, dag) -> None:
    """The rule graph (dot) of the jobs this run resolved, as ``snakemake --rulegraph`` with
    the same targets prints it, taken from the running workflow's DAG (``workflow.dag``):
    a second Snakemake process for it cost every run seconds of parsing and planning."""
    depends: dict = {}
    for job in dag.jobs:
        depends.setdefault(job.rule, set()).update(dep.rule for dep in dag.dependencies[job])
    # rules hash by name, and str hashes differ between processes: sorted, so that one run
    # writes the same file as the next (snakemake's own --rulegraph leaves the set order)
    by_name = attrgetter("name")
    graph = {rule: sorted(depends[rule], key=by_name) for rule in sorted(depends, key=by_name)}
    # DAG.rule_dot() is this with a check that --rulegraph was asked for; _dot is its
    # formatting (snakemake is pinned in requirements.txt)
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(dag._dot(graph))
