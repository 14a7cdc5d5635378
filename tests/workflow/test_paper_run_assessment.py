"""The Assessment's laptop walk-through (docs/papers.md), run for real: Capsule-Forensics on FF++
raw and c23 and its SDAug twin, to the augmentation table, the codecs by bitrate, the
training-data figure and the report."""

from __future__ import annotations

import pandas as pd
import pytest

from fairforge.runtime import read_checkpoint
from fairforge.workflow import detector_settings
from paper_walkthroughs import config_files, prepare, resolved, run_laptop

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def walk(repo_root, tmp_path_factory) -> dict:
    return prepare(repo_root, "assessment", tmp_path_factory.mktemp("assessment"))


def test_the_assessment_laptop_run_makes_its_tables_and_figures(walk):
    """The Assessment's laptop walk-through for real, as written: Capsule-Forensics from the
    fixture's VGG-19 file on rendered FF++ faces at raw and c23, its SDAug twin, one epoch on
    the CPU, to the augmentation table, the codecs' rates and the report."""
    copy, results = walk["copy"], walk["copy"] / "results"
    line, proc = run_laptop(walk, "assessment", timeout=2400)
    # the laptop file's short timing: batch 1 only
    efficiency = pd.read_csv(results / "efficiency.csv")
    assert set(efficiency["detector"]) == {"capsule_raw", "capsule_raw_sdaug", "capsule_c23"}
    assert "latency_ms_bs1" in efficiency and "latency_ms_bs32" not in efficiency
    assert (efficiency["latency_ms_bs1"] > 0).all()
    config = resolved(copy, config_files(line))
    for name in ("capsule_raw", "capsule_raw_sdaug", "capsule_c23"):
        trained = read_checkpoint(results / "models" / name / "model.pt", mmap=True)
        settings = detector_settings(config, name)
        assert trained["input_size"] == 64  # the laptop file's; the paper's 300 px: its recipe
        for key in ("lr", "optimizer", "augment", "frames_train", "pretrained", "recipe"):
            assert trained["train_config"][key] == settings[key], (name, key)
    assert settings["lr"] == 5e-4 and settings["pretrained"].endswith("vgg19-dcbb9e9d.pth")
    # robustness by the paper's categories
    robustness = pd.read_csv(results / "robustness_table.csv")
    categories = set(robustness.loc[robustness["scope"] == "category", "category"])
    assert {"image/compression", "image/combination"} <= categories
    assert {"image", "all"} <= set(robustness.loc[robustness["scope"] == "overall", "category"])
    # each detector beside its SDAug twin, on both datasets
    augmentation = pd.read_csv(results / "augmentation_table.csv")
    assert set(zip(augmentation["detector"], augmentation["twin"])) == {
        ("capsule_raw", "capsule_raw_sdaug")
    }
    assert set(augmentation["dataset"]) == {"ffpp_raw", "ffpp_c23"}
    assert "overall" in set(augmentation["scope"])
    # codecs by their rates: JPEG's falls with its quality, the learned codec has one
    rates = pd.read_csv(results / "compression_rate.csv")
    one = rates.loc[(rates["detector"] == "capsule_raw") & (rates["dataset"] == "ffpp_raw")]
    bpp = one.set_index("variant")["bpp"]
    assert set(bpp.index) == {"jpeg@95", "jpeg@30", "learned_compression@1"}
    assert bpp["jpeg@95"] > bpp["jpeg@30"] > 0 and bpp["learned_compression@1"] > 0
    per_sample = pd.read_csv(results / "ffpp_raw" / "compression_bpp" / "jpeg@30.csv")
    assert (per_sample["bpp"] > 0).all() and int(one["n_samples"].iloc[0]) == len(per_sample)
    for figure in ("compression_rate", "augmentation", "cross_manipulation"):
        assert (results / "figures" / f"{figure}.png").read_bytes()[:4] == b"\x89PNG"
    assert (results / "figures" / "robustness_by_training_data.png").is_file()
    page = (results / "report.html").read_text()
    for title in ("Codecs by bitrate", "Augmented twins", "Training data and robustness"):
        assert title in page, title
