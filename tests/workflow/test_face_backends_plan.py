"""The demo planned with MTCNN as its face backend (`snakemake -n`)."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys

import yaml


def test_mtcnn_config_plans_the_demo_with_mtcnn(repo_root, tmp_path):
    """configs/mtcnn.yaml over the demo's config.yaml: MTCNN on CPU, compared with HOG (a
    plan, no run)."""
    shutil.copy(repo_root / "config.yaml", tmp_path / "config.yaml")
    targets = ["results/synthetic/face_detection_by_backend.csv", "results/synthetic/faces.parquet"]
    configs = ["config.yaml", str(repo_root / "configs" / "mtcnn.yaml")]
    cmd = [sys.executable, "-m", "snakemake", "-s", str(repo_root / "Snakefile"), "-n"]
    plan = subprocess.run(
        [*cmd, *targets, "--configfile", *configs],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plan.returncode == 0, plan.stderr[-2000:]
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", plan.stdout, re.MULTILINE))
    # the demo's images (4 tones x 2 genders x subjects x images) in shards of its
    # shard_size; one comparison job
    demo = yaml.safe_load((repo_root / "config.yaml").read_text())
    world = demo["datasets"]["synthetic"]["options"]
    images = 4 * 2 * world["subjects_per_group"] * world["images_per_subject"]
    shards = math.ceil(images / demo["shard_size"])
    assert jobs["faces_shard"] == str(shards) and jobs["face_backends"] == "1"
