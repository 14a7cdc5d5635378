"""The train_degradation rule run for real: it writes the generator the ranking study reads."""

from __future__ import annotations

import subprocess

import pandas as pd
import pytest
import yaml

from fairforge.images import read_image
from fairforge.perturb.learned_degradation import HighToLowGenerator, load_generator
from fairforge.workflow import DEGRADATION_CHECKPOINT
from snakemake_run import snakemake as run_snakemake


@pytest.mark.workflow
def test_train_degradation_rule_writes_the_generator_the_ranking_study_uses(
    repo_root, face_folders, tmp_path
):
    high, low = face_folders
    with open(repo_root / "tests" / "data" / "tiny_config.yaml") as fh:
        config = yaml.safe_load(fh)
    config["device"] = "cpu"
    config["degradation"] = {
        "high_dir": str(high),
        "low_dir": str(low),
        "steps": 5,
        "batch_size": 4,
    }
    with open(tmp_path / "config.yaml", "w") as fh:
        yaml.safe_dump(config, fh)

    def snakemake(*args: str) -> subprocess.CompletedProcess:
        return run_snakemake(repo_root, tmp_path, "--cores", "1", *args, timeout=1800)

    snakemake(DEGRADATION_CHECKPOINT)
    gen = load_generator(tmp_path / DEGRADATION_CHECKPOINT)
    assert isinstance(gen, HighToLowGenerator)
    import torch

    payload = torch.load(tmp_path / DEGRADATION_CHECKPOINT, map_location="cpu", weights_only=True)
    assert payload["train"]["steps"] == 5 and payload["train"]["seed"] == 3
    assert payload["train"]["n_high"] == 16 and payload["train"]["n_low"] == 16
    assert len(payload["history"]["mse"]) == 5
    sheet = read_image(tmp_path / "results/degradation/samples.png")
    assert sheet.shape == (4 * 64, 8 * 64, 3)  # inputs, pools, generated, real x 8 faces
    log = (tmp_path / "results/logs/degradation/train.log").read_text()
    assert "steps 4-4" in log and "wrote" in log
    assert (tmp_path / "results/pipeline_info/benchmarks/degradation/train.tsv").is_file()

    # The outputs are up to date: a second run would not retrain.
    proc = snakemake("-n", DEGRADATION_CHECKPOINT)
    assert "Nothing to be done" in proc.stdout + proc.stderr

    # The ranking study of the tiny config with the learned degradation: the far-trained
    # encoder trains on faces the generator degraded, and the probes are degraded by it too.
    config["datasets"] = {"synthetic": config["datasets"]["synthetic"]}
    config["ranking"]["degradation"] = "learned"
    with open(tmp_path / "config.yaml", "w") as fh:
        yaml.safe_dump(config, fh)
    proc = snakemake("-p", "results/exposure_table.csv")
    out = proc.stdout + proc.stderr
    train_encoder = out[out.index("rule train_encoder:") :].split("\n\n")[0]
    assert DEGRADATION_CHECKPOINT in train_encoder
    table = pd.read_csv(tmp_path / "results/exposure_table.csv")
    assert set(table["encoder"]) == {"dlib_resnet", "mobilefacenet_far"}
    assert (table["n_identities"] > 0).all()
