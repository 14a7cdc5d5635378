"""FairFD's laptop walk-through (docs/papers.md), run for real: Xception from its ImageNet file
on FF++'s c23 videos and RFW's archive layout, through ``all`` to Table 5 and Figs. 5-7."""

from __future__ import annotations

import shlex

import pandas as pd
import pytest

from fairforge.runtime import read_checkpoint
from fairforge.workflow import detector_settings
from paper_walkthroughs import (
    FF_METHODS,
    FF_RACES,
    RFW_RACES,
    config_files,
    prepare,
    resolved,
    run_laptop,
)

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def walk(repo_root, tmp_path_factory) -> dict:
    return prepare(repo_root, "fairfd", tmp_path_factory.mktemp("fairfd"))


def test_fairfd_runs_one_detector_through_all(walk):
    """The laptop walk-through for real, as written: FF++'s c23 videos, split files and race
    annotation and RFW's archive layout, Xception from its ImageNet file, CPU, through
    ``all``; the results stay in the copy."""
    copy, results = walk["copy"], walk["copy"] / "results"
    line, proc = run_laptop(walk, "fairfd", timeout=1800)
    assert shlex.split(line)[1] == "all"
    assert sorted(p.name for p in (results / "models").iterdir()) == ["xception"]
    table = pd.read_csv(results / "fairness_table.csv")
    assert set(table["dataset"]) == {"ffpp", "rfw"}
    assert set(table.columns) - {"dataset", "metric", "reason"} == {"xception"}
    # FF++ through its official split files and race annotation, every method's videos read
    ff = pd.read_parquet(results / "ffpp" / "sources.parquet")
    usable = ff[ff["ok"]]
    assert set(usable["method"]) == {"real", *FF_METHODS[:4]}
    assert set(usable["split"]) == {"train", "val", "test"}
    assert set(usable["group"]) == set(FF_RACES.values())
    # RFW's four races, real and FairFD's approaches (a forgery that fails for a face stays in
    # its manifest with the reason, so not every approach need reach the predictions)
    preds = pd.read_parquet(results / "predictions" / "xception" / "rfw" / "clean.parquet")
    assert set(preds["group"]) == set(RFW_RACES) and set(preds["split"]) == {"test"}
    approaches = {"faceswap", "simswap", "fastreen", "dualreen", "maskgan"}
    assert "real" in set(preds["method"]) and set(preds["method"]) - {"real"} <= approaches
    assert set(preds["method"]) & approaches
    # trained as the paper's file says (its recipe, from the ImageNet file), with the laptop
    # file's epochs and input size: nothing of the demo's
    config = resolved(copy, config_files(line))
    trained = read_checkpoint(results / "models" / "xception" / "model.pt", mmap=True)
    settings = detector_settings(config, "xception")
    assert trained["input_size"] == 64 and trained["train_config"]["model"] == {}
    keys = ("epochs", "lr", "batch_size", "weight_decay", "train_methods", "recipe", "augment")
    for key in (*keys, "pretrained"):
        assert trained["train_config"][key] == settings[key], key
    assert settings["recipe"] == "fairfd" and settings["augment"] == "fairfd"
    assert settings["epochs"] == 1 and settings["lr"] == 0.0002
    assert settings["pretrained"] == str(walk["mnt"] / "weights" / "xception-b5690688.pth")
    # Table 5 on the test-only RFW: each race's threshold fitted on the evaluated set, named so
    thresholds = pd.read_csv(results / "thresholds_table.csv")
    on_rfw = thresholds.loc[thresholds["dataset"] == "rfw"].set_index("metric")
    assert set(on_rfw["fitted_on"]) == {"test (the evaluated set)"}
    assert {f"threshold[{race}]" for race in RFW_RACES} <= set(on_rfw.index)
    assert {f"accuracy[faceswap][{race}]" for race in RFW_RACES} <= set(on_rfw.index)
    assert on_rfw["per_group"].notna().all()
    # Figs. 5-7: per-subject rates, Xception's features on RFW, their t-SNE and MMD
    rates = pd.read_csv(results / "subject_rates.csv")
    assert set(rates["dataset"]) == {"ffpp", "rfw"} and set(rates["detector"]) == {"xception"}
    features = pd.read_parquet(results / "features" / "xception" / "rfw.parquet")
    assert set(features["method"]) <= {"real", "faceswap", "fastreen"}
    assert set(features["group"]) == set(RFW_RACES)
    assert len({len(v) for v in features["feature"]}) == 1  # one width: the penultimate layer
    mmd = pd.read_csv(results / "feature_mmd.csv")
    assert set(mmd["reference_group"]) == {"Caucasian"}
    assert set(mmd["group"]) <= set(RFW_RACES) - {"Caucasian"}
    for name in ("subject_rates", "feature_tsne", "feature_mmd"):
        assert (results / "figures" / f"{name}.png").stat().st_size > 1000, name
    report = (results / "report.html").read_text()
    assert "Subjects and feature space" in report and "fitted on test (the evaluated set)" in report
    # the run's record of its rule graph, from the same config files
    assert "digraph" in (results / "pipeline_info" / "rulegraph.dot").read_text()
    # the laptop file's short timing: batch 1 only
    efficiency = pd.read_csv(results / "efficiency.csv")
    assert list(efficiency["detector"]) == ["xception"] and "latency_ms_bs32" not in efficiency
    assert (efficiency["latency_ms_bs1"] > 0).all()
