"""A finished run grows without redoing what it has: adding a forgery method, a variant or a
dataset plans no training of an unchanged detector and no prediction of scored samples; a
killed run resumes to the same bytes. The finished run is the session's `cut_run` (the tiny
config cut to one dataset, two methods, a clean and a video variant and the ranking study,
two shards of each stage), which the SLURM test also compares its cluster run with; these
tests grow copies of it."""

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from fairforge.perturb.variants import is_video_variant
from snakemake_run import snakemake, snakemake_command
from workflow_trees import CUT_TARGETS as TARGETS

pytestmark = pytest.mark.workflow


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


def test_nothing_to_do_on_the_finished_run(repo_root, cut_run, tmp_path):
    assert planned(repo_root, cut_run, _config(cut_run), tmp_path) == []


def test_a_new_forgery_method_scores_its_fakes_only(repo_root, cut_run, tmp_path):
    config = _config(cut_run)
    config["forgery"]["methods"].append("fastreen")
    jobs = planned(repo_root, cut_run, config, tmp_path)
    rules = [rule for rule, _ in jobs]
    assert "train" not in rules
    predict = [wc for rule, wc in jobs if rule == "predict"]
    # A video variant's crops are made per shard of clips, every method's clips in one
    # manifest, so its predictions are made again; under the other variants only the new
    # fakes are scored.
    per_crop = [wc for wc in predict if not is_video_variant(wc["variant"])]
    assert per_crop and {wc["method"] for wc in per_crop} == {"fastreen"}
    assert {wc["method"] for rule, wc in jobs if rule == "method_samples"} == {"fastreen"}
    assert not {"sources_shard", "faces_shard", "pairs"} & set(rules)


def test_a_new_variant_scores_under_it_only(repo_root, cut_run, tmp_path):
    config = _config(cut_run)
    config["variants"].append("jpeg@30")
    jobs = planned(repo_root, cut_run, config, tmp_path)
    assert "train" not in [rule for rule, _ in jobs]
    predict = [wc for rule, wc in jobs if rule == "predict"]
    assert predict and {wc["variant"] for wc in predict} == {"jpeg@30"}


def test_a_new_dataset_scores_its_own_samples_only(repo_root, cut_run, tmp_path):
    config = _config(cut_run)
    config["datasets"]["more"] = config["datasets"]["synthetic"]
    jobs = planned(repo_root, cut_run, config, tmp_path)
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


def test_killed_run_resumes_to_identical_outputs(repo_root, cut_run, tmp_path):
    """A copy of the finished run trains its detector again and scores again (``--forcerun
    train``), SIGKILLed once the new model is written and its prediction jobs run; unlock,
    rerun: the outputs equal the uninterrupted run byte for byte (which also proves that
    training and scoring again give the same bytes)."""
    work = tmp_path / "run"
    shutil.copytree(cut_run, work, symlinks=True)  # keeps every mtime
    model = work / "results" / "models" / "meso4" / "model.pt"
    before = model.stat().st_mtime_ns
    cmd = snakemake_command(repo_root, work, "--cores", "2", "--forcerun", "train", *TARGETS)
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.time() + 600

    def retrained() -> bool:
        return model.exists() and model.stat().st_mtime_ns != before

    while not retrained() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # Interrupted: the tables are older than the new model, so they are still to be made.
    table = work / "results" / "fairness_table.csv"
    assert table.stat().st_mtime_ns < model.stat().st_mtime_ns

    snakemake(repo_root, work, "--unlock")
    snakemake(repo_root, work, "--cores", "2", "--rerun-incomplete", *TARGETS)
    assert table.stat().st_mtime_ns > model.stat().st_mtime_ns
    expected, got = _outputs(cut_run), _outputs(work)
    # --forcerun also plans the rules downstream of train that the targets do not need (the
    # protocol card, the forgery separation): the uninterrupted run's outputs must all be here
    assert set(expected) <= set(got)
    differ = [name for name in expected if expected[name] != got[name]]
    assert not differ, f"outputs differ after resume: {differ[:10]}"
