"""The SLURM profile, run for real on a one-node SLURM on this machine.

The cut of the tiny config (`workflow_trees.cut_config`) goes through `--profile
profiles/slurm` (adapted to this node only where a user would: partition, no GPUs, threads and
memory that fit) and must give the same manifests and tables as its local run (the session's
`cut_run`, which the partial-rerun tests grow); every non-local job must have gone through
sbatch.
"""

import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from slurm_cluster import LocalSlurm, ensure_installed, profile_for_node
from snakemake_run import snakemake_command
from workflow_trees import CUT_TARGETS, cut_config, workdir_with

pytestmark = pytest.mark.slurm

# localrules of rules/common.smk, and rules that must run as SLURM jobs (others may join).
LOCAL_RULES = {"sources", "faces", "forgery", "samples", "failures_per_group"}
SUBMITTED_RULES = {
    "sources_listing",
    "sources_shard",
    "faces_shard",
    "pairs",
    "forgery_shard",
    "train",
    "predict",
    "video_variant_shard",
    "train_encoder",
    "embed_shard",
    "fairness_table",
}
# The manifests and result tables (not logs, timings or training curves, which vary).
OUTPUTS = [
    "*/sources.parquet",
    "*/faces.parquet",
    "*/pairs.parquet",
    "*/samples.parquet",
    "*/forgeries/*.parquet",
    "predictions/*/*/*.parquet",
    "fairness_table.csv",
    "fairness_per_group.csv",
    "fairness_ci.csv",
    "fairness_standing.csv",
    "failures_per_group.csv",
    "*/face_detection_rate.csv",
    "*/failures.csv",
    "exposure_table.csv",
    "detection_table.csv",
    "robustness_table.csv",
]
JOB = re.compile(r"^(?:local)?rule (\w+):", flags=re.M)
SUBMITTED = re.compile(r"Job \d+ has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")
# .snakemake/slurm_logs/rule_{rule}[/{wildcards}]/{jobid}.log
LOG_RULE = re.compile(r"/slurm_logs/rule_(\w+)/")


def gpu_rules(repo: Path) -> tuple[str, ...]:
    """Rules that declare a `gpu` resource in rules/*.smk."""
    found = []
    for smk in sorted((repo / "rules").glob("*.smk")):
        blocks = re.split(r"^rule (\w+):", smk.read_text(), flags=re.M)
        found += [
            name
            for name, body in zip(blocks[1::2], blocks[2::2])
            if re.search(r"^\s+gpu=", body, flags=re.M)
        ]
    return tuple(found)


def check(returncode: int, out: str, what: str) -> str:
    if returncode != 0:
        raise AssertionError(f"{what} failed:\n{out[-10000:]}")
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = ensure_installed()
    if reason:
        pytest.skip(f"no local SLURM: {reason}")
    slurm = LocalSlurm(tmp_path_factory.mktemp("slurm_state"))
    if not slurm.idle_node() and os.geteuid() != 0:
        pytest.skip("no SLURM cluster answers and starting one needs root")
    slurm.start()
    yield slurm
    slurm.stop()


@pytest.fixture(scope="module")
def runs(repo_root, cluster, tmp_path_factory, request):
    """(SLURM workdir, its Snakemake output, local workdir) of the cut tiny config; the
    session's local run of it (`cut_run`) is made while the SLURM run's jobs mostly wait for
    status checks."""
    workdir = workdir_with(tmp_path_factory.mktemp("slurm"), "run", cut_config(repo_root))
    profile = yaml.safe_load((repo_root / "profiles" / "slurm" / "config.yaml").read_text())
    node_profile = workdir / "profile"
    node_profile.mkdir()
    (node_profile / "config.yaml").write_text(
        yaml.safe_dump(
            profile_for_node(
                profile,
                partition=cluster.partition,
                cpus=cluster.node_cpus,
                memory_mb=cluster.node_memory_mb,
                gpu_rules=gpu_rules(repo_root),
            )
        )
    )
    slurm_log = open(workdir / "snakemake.out", "w+")
    proc = subprocess.Popen(
        snakemake_command(
            repo_root,
            workdir,
            "--profile",
            str(node_profile),
            "--slurm-init-seconds-before-status-checks",
            "2",
            "--slurm-keep-successful-logs",
            "--latency-wait",
            "10",
            "--retries",
            "0",
            *CUT_TARGETS,
        ),
        env=cluster.env,
        stdout=slurm_log,
        stderr=subprocess.STDOUT,
    )
    try:
        local_run = request.getfixturevalue("cut_run")
        returncode = proc.wait(timeout=2400)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        slurm_log.seek(0)
        out = slurm_log.read()
        slurm_log.close()
    if returncode != 0:
        check(returncode, out + cluster.logs(), "snakemake --profile profiles/slurm")
    return workdir, out, local_run


def test_profile_is_what_the_test_adapts(repo_root):
    profile = yaml.safe_load((repo_root / "profiles/slurm/config.yaml").read_text())
    assert profile["executor"] == "slurm"
    assert profile["slurm-status-command"] == "squeue"
    gpu = gpu_rules(repo_root)
    assert {"train", "predict"} <= set(gpu)
    # Every GPU rule gets its partition and cores from the profile.
    for rule in gpu:
        assert f"{rule}:slurm_partition='gpu'" in profile["set-resources"], rule
        assert any(e.startswith(f"{rule}:cpus_per_gpu=") for e in profile["set-resources"])
    adapted = profile_for_node(profile, partition="debug", cpus=2, memory_mb=3000, gpu_rules=gpu)
    assert "slurm_partition='debug'" in adapted["default-resources"]
    assert "train:gpu=0" in adapted["set-resources"]
    assert all(n == 1 for n in adapted["set-threads"].values())  # two jobs per 2-cpu node
    assert "train:mem_mb=min(32000 * attempt, 3000)" in adapted["set-resources"]
    for key in ("executor", "retries", "jobs", "slurm-status-command"):
        assert adapted[key] == profile[key]


def test_jobs_went_through_sbatch(runs):
    _, out, _ = runs
    submitted = SUBMITTED.findall(out)
    assert submitted, out[-3000:]
    rules = Counter()
    for jobid, log in submitted:
        log = Path(log)
        assert log.is_file(), f"no SLURM log for job {jobid}: {log}"
        assert log.stem == jobid
        rules[LOG_RULE.search(str(log)).group(1)] += 1
        text = log.read_text()
        # The job ran Snakemake's in-allocation executor, i.e. inside SLURM.
        assert "--executor slurm-jobstep" in text and "Finished" in text, text[-2000:]
    # Every job Snakemake ran as non-local went through sbatch, and no local one did.
    assert rules == Counter(re.findall(r"^rule (\w+):", out, flags=re.M))
    assert SUBMITTED_RULES <= set(rules)
    assert set(re.findall(r"^localrule (\w+):", out, flags=re.M)) >= LOCAL_RULES
    assert not set(rules) & LOCAL_RULES


def test_same_jobs_as_a_local_run(runs):
    _, out, local_run = runs
    # The first log of the local workdir is its full run (later ones may be dry runs).
    local_log = sorted((local_run / ".snakemake" / "log").glob("*.snakemake.log"))[0]
    local_jobs = Counter(JOB.findall(local_log.read_text()))
    assert Counter(JOB.findall(out)) == local_jobs
    assert local_jobs["faces_shard"] >= 2 and local_jobs["forgery_shard"] >= 2


def assert_same_frame(ours: pd.DataFrame, theirs: pd.DataFrame, name: str) -> None:
    assert list(ours.columns) == list(theirs.columns), name
    assert len(ours) == len(theirs), name
    for col in ours.columns:
        a, b = ours[col], theirs[col]
        if a.dtype == object and any(isinstance(v, (np.ndarray, list)) for v in a):
            for x, y in zip(a, b):
                x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
                assert np.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True), (name, col)
        else:
            pd.testing.assert_series_equal(a, b, check_exact=False, rtol=1e-5, obj=f"{name}:{col}")


def outputs(results: Path) -> list[str]:
    return sorted(
        {str(p.relative_to(results)) for pattern in OUTPUTS for p in results.glob(pattern)}
    )


def test_outputs_equal_a_local_run(runs):
    workdir, _, local_run = runs
    ours, theirs = workdir / "results", local_run / "results"
    compared = outputs(theirs)
    assert outputs(ours) == compared
    assert {"fairness_table.csv", "synthetic/samples.parquet"} <= set(compared)
    assert {"fairness_standing.csv", "failures_per_group.csv"} <= set(compared)
    for rel in compared:
        read = pd.read_parquet if rel.endswith(".parquet") else pd.read_csv
        assert_same_frame(read(ours / rel), read(theirs / rel), rel)
