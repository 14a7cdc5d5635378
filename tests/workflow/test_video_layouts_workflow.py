"""UADFV, DF-TIMIT, ForgeryNet and Celeb-DF's first release through one real run."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from snakemake_run import snakemake
from video_trees import (
    FRAMES,
    celebdf_tree,
    celebdf_v1_first_release,
    dftimit_tree,
    forgerynet_tree,
    uadfv_tree,
)
from workflow_trees import write_folder_tree

# What the run is asked for next to the predictions, per dataset.
SHOWN = ("samples.parquet", "split_report.csv")


@pytest.mark.workflow
def test_new_adapters_run_to_predictions(repo_root, tmp_path):
    """One tiny real run: meso4 trains two epochs on Celeb-DF v2 (official split as
    published, a third of its train part carved out as val) and is tested on it, Celeb-DF v1
    (its first archive's names), UADFV, DF-TIMIT (both qualities, VidTIMIT reals), ForgeryNet
    (image and video tracks, its official parts) and DiveFace (its 70/30 split by identity)."""
    data = tmp_path / "data"
    cd = celebdf_tree(data / "Celeb-DF-v2")
    v1 = celebdf_v1_first_release(data / "Celeb-DF-v1", faces=True)
    ua = uadfv_tree(data / "UADFV", pairs=2, faces=True)
    dft, vidtimit = data / "DeepfakeTIMIT", data / "VidTIMIT"
    dftimit_tree(dft, vidtimit, faces=True)
    fn = forgerynet_tree(data / "ForgeryNet", faces=True)
    write_folder_tree(data / "DiveFace", {"HN4K_120": "dark", "HB4K_120": "light"}, 2)
    frames = {"frames_per_video": FRAMES}
    config = yaml.safe_load((repo_root / "tests" / "data" / "tiny_config.yaml").read_text())
    config["datasets"] = {
        "celebdf": {
            "adapter": "celebdf",
            "root": str(cd),
            "group_by": ["group"],
            "split": {"official": True, "val_from_train": 0.34},
            "options": {**frames, "attributes": "groups.csv"},
        },
        "celebdf_v1": {
            "adapter": "celebdf_v1",
            "root": str(v1),
            "group_by": ["group"],
            "split": "official",
            "options": {**frames, "attributes": "groups.csv"},
        },
        "uadfv": {
            "adapter": "uadfv",
            "root": str(ua),
            "split": "test_only",
            "options": {**frames, "attributes": "groups.csv"},
        },
        "dftimit": {
            "adapter": "dftimit",
            "root": str(dft),
            "split": "test_only",
            "options": {**frames, "vidtimit": str(vidtimit), "qualities": ["higher", "lower"]},
        },
        "forgerynet": {
            "adapter": "forgerynet",
            "root": str(fn),
            "split": "official",
            "options": frames,
        },
        "diveface": {"adapter": "diveface", "root": str(data / "DiveFace"), "split": "official"},
    }
    for block in config["datasets"].values():
        block["forgery"] = False
    config["faces"]["upsample"] = 1  # the fixture trees' faces are under HOG's 80 px
    config["training"].update(epochs=2, train_methods=["Celeb-synthesis"])
    config["variants"] = ["clean"]
    config["ranking"] = {"enabled": False}
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    targets = [f"results/predictions/meso4/{name}/clean.parquet" for name in config["datasets"]]
    targets += [f"results/{name}/{f}" for name in config["datasets"] for f in SHOWN]
    snakemake(repo_root, workdir, "--cores", "2", *targets)

    results = workdir / "results"
    methods = {
        "celebdf": {"Celeb-synthesis"},
        "celebdf_v1": {"Celeb-synthesis"},
        "uadfv": {"UADFV"},
        "dftimit": {"DF-TIMIT-HQ", "DF-TIMIT-LQ"},
        "forgerynet": {"FaceShifter", "DeepFakes"},
        "diveface": set(),
    }
    for name, fakes in methods.items():
        sources = pd.read_parquet(results / name / "sources.parquet")
        assert sources["ok"].all(), (name, sources.loc[~sources["ok"], "reason"].unique())
        samples = pd.read_parquet(results / name / "samples.parquet")
        assert set(samples["method"]) == {"real", *fakes}, name
        preds = pd.read_parquet(results / "predictions" / "meso4" / name / "clean.parquet")
        assert "test" in set(preds["split"]) and set(preds["method"]) == {"real", *fakes}, name
        assert preds["score"].between(0, 1).all(), name

    # Celeb-DF keeps every training video (the published list) and has a val part, on which
    # each epoch was judged: the best epoch is chosen, not the first by default.
    celeb = pd.read_parquet(results / "celebdf" / "sources.parquet").drop_duplicates("video_id")
    assert set(celeb["split"]) == {"train", "val", "test"}
    assert (
        celeb.loc[celeb["video_id"] == "Celeb-synthesis_id1_id5_0000", "split"]
        .isin(["train", "val"])
        .all()
    )
    report = pd.read_csv(results / "celebdf" / "split_report.csv").set_index("split")
    assert not report["subject_disjoint"].any()
    assert report.loc["none", "rows"] == 0 and report.loc["val", "videos"] > 0
    assert report.loc["test", "shared_subjects"] == 1  # id5: in a test video and a training fake
    log = pd.read_csv(results / "models" / "meso4" / "training_log.csv")
    assert len(log) == 2 and (log["n_val"] > 0).all() and log["val_auc"].notna().all()
    # DiveFace: 70/30 by identity within each group (two identities a group here).
    dive = pd.read_parquet(results / "diveface" / "sources.parquet")
    assert (dive.groupby("subject_id")["split"].nunique() == 1).all()
    per_group = dive.drop_duplicates("subject_id").groupby(["group", "split"]).size()
    assert per_group.to_dict() == {
        ("Black_male", "test"): 1,
        ("Black_male", "train"): 1,
        ("Caucasian_male", "test"): 1,
        ("Caucasian_male", "train"): 1,
    }
    forgery = pd.read_csv(results / "forgerynet" / "split_report.csv").set_index("split")
    assert forgery.loc["train", "usable"] == 2 + 2 * FRAMES and forgery.loc["val", "rows"] == 0
