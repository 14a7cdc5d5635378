"""A finished run grows without redoing what it has: adding a forgery method, a variant or a
dataset plans no training of an unchanged detector and no prediction of scored samples; a
killed run resumes to the same bytes."""

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from snakemake_run import snakemake, snakemake_command

pytestmark = pytest.mark.workflow

# What these tests are about (training, prediction, the tables) ends in the fairness table
# (clean predictions) and the robustness table (every variant's predictions); `all` adds the
# report, the forgery-quality card and the timing, which the tiny run covers.
TARGETS = ("results/fairness_table.csv", "results/robustness_table.csv")


@pytest.fixture(scope="module")
def small_run(repo_root, tmp_path_factory) -> Path:
    """tests/data/tiny_config.yaml cut down: one dataset, two methods, meso4 for one epoch,
    clean only, no ranking; run to the fairness table."""
    config = yaml.safe_load((repo_root / "tests" / "data" / "tiny_config.yaml").read_text())
    config["datasets"] = {"synthetic": config["datasets"]["synthetic"]}
    config["forgery"]["methods"] = ["faceswap", "simswap"]
    config["variants"] = ["clean"]
    config["ranking"] = {"enabled": False}
    workdir = tmp_path_factory.mktemp("small_run")
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    snakemake(repo_root, workdir, "--cores", "2", *TARGETS)
    return workdir


def planned(repo_root: Path, workdir: Path, config: dict, tmp_path: Path) -> list[tuple]:
    """(rule, wildcards) of every job a dry run on a copy of ``workdir`` plans, default
    rerun triggers, with ``config``."""
    copy = tmp_path / "run"
    shutil.copytree(workdir, copy, symlinks=True)  # keeps every mtime
    (copy / "grown.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = snakemake(
        repo_root, copy, "-n", "--cores", "1", *TARGETS,
        configfiles=[copy / "grown.yaml"], timeout=900,
    )  # fmt: skip
    jobs, rule = [], None
    for line in (proc.stdout + proc.stderr).splitlines():
        if m := re.match(r"^(?:local)?rule (\w+):", line):
            rule = m.group(1)
            jobs.append((rule, {}))
        elif rule and (m := re.match(r"^\s+wildcards: (.*)$", line)):
            jobs[-1] = (rule, dict(kv.split("=", 1) for kv in m.group(1).split(", ")))
    return jobs


def _config(workdir: Path) -> dict:
    return yaml.safe_load((workdir / "config.yaml").read_text())


def test_nothing_to_do_on_the_finished_run(repo_root, small_run, tmp_path):
    assert planned(repo_root, small_run, _config(small_run), tmp_path) == []


def test_a_new_forgery_method_scores_its_fakes_only(repo_root, small_run, tmp_path):
    config = _config(small_run)
    config["forgery"]["methods"].append("fastreen")
    jobs = planned(repo_root, small_run, config, tmp_path)
    rules = [rule for rule, _ in jobs]
    assert "train" not in rules
    predict = [wc for rule, wc in jobs if rule == "predict"]
    assert predict and {wc["method"] for wc in predict} == {"fastreen"}
    assert {wc["method"] for rule, wc in jobs if rule == "method_samples"} == {"fastreen"}
    assert not {"sources_shard", "faces_shard", "pairs"} & set(rules)


def test_a_new_variant_scores_under_it_only(repo_root, small_run, tmp_path):
    config = _config(small_run)
    config["variants"].append("jpeg@30")
    jobs = planned(repo_root, small_run, config, tmp_path)
    assert "train" not in [rule for rule, _ in jobs]
    predict = [wc for rule, wc in jobs if rule == "predict"]
    assert predict and {wc["variant"] for wc in predict} == {"jpeg@30"}


def test_a_new_dataset_scores_its_own_samples_only(repo_root, small_run, tmp_path):
    config = _config(small_run)
    config["datasets"]["more"] = config["datasets"]["synthetic"]
    jobs = planned(repo_root, small_run, config, tmp_path)
    assert "train" not in [rule for rule, _ in jobs]
    predict = [wc for rule, wc in jobs if rule == "predict"]
    assert predict and {wc["dataset"] for wc in predict} == {"more"}


# Measured times differ between runs by nature: training logs (seconds per epoch) and the
# efficiency table and figure (latency).
TIMINGS = {"training_log.csv", "efficiency.csv", "efficiency.png"}


def _outputs(workdir: Path) -> dict[str, bytes]:
    """Every manifest and table a run wrote (logs and timings excluded)."""
    results = workdir / "results"
    skip = ("logs/", "pipeline_info/")
    return {
        p.relative_to(results).as_posix(): p.read_bytes()
        for p in sorted(results.rglob("*"))
        if p.is_file()
        and p.suffix in (".parquet", ".csv", ".png")
        and not p.relative_to(results).as_posix().startswith(skip)
        and p.name not in TIMINGS
    }


def test_killed_run_resumes_to_identical_outputs(repo_root, small_run, tmp_path):
    """SIGKILL mid-run, unlock, rerun: the outputs equal an uninterrupted run byte for byte
    (which also proves that two runs of the same config are identical)."""
    shutil.copy(small_run / "config.yaml", tmp_path / "config.yaml")
    cmd = snakemake_command(repo_root, tmp_path, "--cores", "2", *TARGETS)
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    marker = tmp_path / "results" / "synthetic" / "faces.parquet"
    deadline = time.time() + 600
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "results" / "fairness_table.csv").exists()

    snakemake(repo_root, tmp_path, "--unlock")
    snakemake(repo_root, tmp_path, "--cores", "2", "--rerun-incomplete", *TARGETS)
    expected, got = _outputs(small_run), _outputs(tmp_path)
    assert sorted(got) == sorted(expected)
    differ = [name for name in expected if expected[name] != got[name]]
    assert not differ, f"outputs differ after resume: {differ[:10]}"
