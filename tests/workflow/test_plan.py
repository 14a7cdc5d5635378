"""The plan of a large dataset: jobs grow with shards, methods, detectors and variants,
never with images; and `snakemake --lint` is clean."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from fairforge.sharding import shard_ids
from fairforge.workflow import count_source_items

REPO = Path(__file__).resolve().parents[2]
# The benchmark's config generator and job formula, so the test checks what it measures.
spec = importlib.util.spec_from_file_location("bench_plan", REPO / "benchmarks" / "bench_plan.py")
bench_plan = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_plan)

N_IMAGES = 10_000
SHARD_SIZE = 500


@pytest.fixture(scope="module")
def plan_10k(tmp_path_factory):
    workdir = bench_plan.write_plan_workdir(
        tmp_path_factory.mktemp("plan_10k"), N_IMAGES, shard_size=SHARD_SIZE
    )
    _, counts, _ = bench_plan.dry_run(workdir)
    return counts


def test_job_count_follows_shards_methods_detectors(plan_10k):
    repeated = bench_plan.repeated_jobs(
        N_IMAGES,
        SHARD_SIZE,
        len(bench_plan.METHODS),
        len(bench_plan.DETECTORS),
        len(bench_plan.VARIANTS),
    )
    assert {rule: plan_10k.get(rule) for rule in repeated} == repeated
    assert repeated["forgery_shard"] == 20 * 5  # shards x methods
    # detectors x variants x prediction shards (10k images: one) x (methods + the real crops)
    assert repeated["predict"] == 3 * 3 * 1 * (5 + 1)
    single = bench_plan.single_jobs(plan_10k, repeated)
    repeating = {rule: n for rule, n in single.items() if n != 1}
    assert not repeating, (
        f"rules {repeating} repeat: add them to benchmarks/bench_plan.repeated_jobs"
    )
    assert plan_10k["total"] == sum(repeated.values()) + len(single)


def test_job_count_does_not_grow_with_images(plan_10k, tmp_path):
    # Twice the images in twice larger shards: the same shards, so the same plan.
    workdir = bench_plan.write_plan_workdir(tmp_path, 2 * N_IMAGES, shard_size=2 * SHARD_SIZE)
    _, counts, _ = bench_plan.dry_run(workdir)
    assert counts == plan_10k


def test_placeholder_csv_is_counted_like_a_dataset(tmp_path):
    csv = tmp_path / "images.csv"
    bench_plan.write_placeholder_csv(csv, 1234)
    rows = count_source_items("bench", {"adapter": "csv", "root": str(csv)})
    assert rows == 1234
    assert shard_ids(rows, SHARD_SIZE) == ["000", "001", "002"]


def test_lint_is_clean():
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Congratulations" in out, out[-4000:]
