"""FaceForensics++, Celeb-DF v2, DFDC and DeeperForensics-1.0 fixture trees through one real run."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from fairforge.sources import check_subject_disjoint
from snakemake_run import snakemake
from video_trees import video_datasets


@pytest.mark.workflow
def test_four_video_datasets_train_on_ffpp_and_reach_the_fairness_table(repo_root, tmp_path):
    """One real run: a detector trains on FaceForensics++ (official split, its Deepfakes, no
    generated fakes, H.264-compressed training crops) and is tested on it, Celeb-DF v2 (its test list), DFDC (test only) and
    DeeperForensics-1.0 (its test split), up to the fairness and per-method tables."""
    datasets = video_datasets(tmp_path / "data")
    config = yaml.safe_load((repo_root / "tests" / "data" / "tiny_config.yaml").read_text())
    config["datasets"] = {
        name: {"group_by": ["group"], **block, "forgery": False} for name, block in datasets.items()
    }
    # The detector trains on H.264-compressed copies of FF++'s training crops.
    config["datasets"]["ffpp"]["train_compression"] = "vid_h264@40"
    config["faces"]["upsample"] = 1  # the fixture videos' faces are under HOG's 80 px
    config["forgery"]["methods"] = ["faceswap"]
    config["training"]["train_methods"] = ["Deepfakes"]
    config["variants"] = ["clean"]
    config["ranking"] = {"enabled": False}
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    targets = ("results/fairness_table.csv", "results/cross_manipulation.csv")
    snakemake(repo_root, workdir, "--cores", "2", *targets)

    results = workdir / "results"
    methods = {
        "ffpp": "Deepfakes",
        "celebdf": "Celeb-synthesis",
        "dfdc": "DFDC",
        "dfr": "end_to_end",
    }
    for name, method in methods.items():
        sources = pd.read_parquet(results / name / "sources.parquet")
        usable = sources[sources["ok"]]
        assert set(usable["method"]) == {"real", method}, name
        assert (usable.groupby("video_id").size() == 2).all(), name
        check_subject_disjoint(usable)
        # No forgery or pairing job ran: the datasets bring their fakes.
        assert not (results / name / "forgeries").exists()
        assert not (results / name / "pairs.parquet").exists()
        preds = pd.read_parquet(results / "predictions" / "meso4" / name / "clean.parquet")
        # Test rows of every dataset are scored (val rows too where a dataset has them).
        assert "test" in set(preds["split"]) and set(preds["method"]) == {"real", method}
        assert set(preds["group"]) == {"light", "dark"} or name == "dfr", name
    copies = pd.read_parquet(results / "ffpp" / "train_copies" / "crops.parquet")
    moved = copies["path"].str.startswith("ffpp/train_copies/crops/")
    assert moved.equals(copies["split"] == "train") and moved.sum() == 4 * 2
    assert all((results / p).is_file() for p in copies["path"])
    dfr = pd.read_parquet(results / "dfr" / "sources.parquet").drop_duplicates("video_id")
    assert dfr.loc[~dfr["ok"], "reason"].str.startswith("target video without fakes").sum() == 4
    assert set(dfr.loc[dfr["ok"], "group"]) == {"female", "male"}
    assert set(pd.read_parquet(results / "dfdc" / "sources.parquet")["split"]) == {"test"}

    table = pd.read_csv(results / "fairness_table.csv")
    assert set(table["dataset"]) == set(methods) and "DPD" in set(table["metric"])
    per_method = pd.read_csv(results / "detection_per_method.csv")
    assert set(zip(per_method["dataset"], per_method["method"])) == set(methods.items())
    cross = pd.read_csv(results / "cross_manipulation.csv")
    assert set(cross["trained_on"]) == {"Deepfakes"}
    assert set(methods.values()) | {"average"} <= set(cross.columns)
