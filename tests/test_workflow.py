"""The workflow, run for real by Snakemake on the tiny config."""
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fairforge.manifest import CONTRACTS

pytestmark = pytest.mark.workflow

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def snakemake(repo: Path, workdir: Path, *args: str, check: bool = True):
    cmd = [*SNAKEMAKE, "--snakefile", str(repo / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "config.yaml"), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1500)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n"
                             f"{proc.stderr[-8000:]}")
    return proc


@pytest.fixture(scope="module")
def tiny_run(repo_root, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tiny_run")
    shutil.copy(repo_root / "tests" / "data" / "tiny_config.yaml", workdir / "config.yaml")
    snakemake(repo_root, workdir, "--cores", "2", "all")
    return workdir


def test_outputs_follow_the_contracts(tiny_run):
    results = tiny_run / "results"
    for path, contract in [("synthetic/sources.parquet", "sources"),
                           ("synthetic/faces.parquet", "faces"),
                           ("synthetic/pairs.parquet", "pairs"),
                           ("synthetic/forgeries/faceswap.parquet", "forgery"),
                           ("synthetic/samples.parquet", "samples"),
                           ("predictions/meso4/synthetic/clean.parquet", "predictions")]:
        frame = pd.read_parquet(results / path)
        missing = set(CONTRACTS[contract]) - set(frame.columns)
        assert not missing, f"{path} lacks {missing}"
        assert len(frame) > 0, path
    table = pd.read_csv(results / "fairness_table.csv")
    assert {"dataset", "metric", "meso4"} <= set(table.columns)
    for metric in ("DPD", "AADPD", "URDPD_one_plus_acc", "AASTD", "URDEOdds_one_plus_acc"):
        assert metric in set(table["metric"]), metric
    rate = pd.read_csv(results / "synthetic" / "face_detection_rate.csv")
    assert len(rate) == 4  # four tone groups
    preds = pd.read_parquet(results / "predictions/meso4/synthetic/clean.parquet")
    assert preds["score"].between(0, 1).all()
    assert set(preds["split"]) <= {"val", "test"}


def test_nothing_left_to_do(repo_root, tiny_run):
    proc = snakemake(repo_root, tiny_run, "-n", "--cores", "1", "all")
    assert "Nothing to be done" in proc.stdout + proc.stderr
