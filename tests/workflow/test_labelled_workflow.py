"""A csv of existing real and fake images, with their methods, run through the workflow.

The faces are rendered by the synthetic renderer and saved as plain image files. Each subject
also has two fakes that are edited photos, as a dataset would ship them: ``paste`` blends the
face of the subject's partner, rendered in the same pose, into the subject's photo, and
``tint`` recolours the face. The csv lists them with label 1, their method and the two
identities; fairforge also generates ``faceswap`` fakes of the real images, so the samples
mix imported and generated fakes. A second dataset is the same csv, test only.
"""

import pandas as pd
import pytest

from snakemake_run import snakemake
from workflow_trees import csv_config, workdir_with, write_labelled_faces

pytestmark = pytest.mark.workflow


def test_labelled_csv_trains_predicts_and_reaches_the_fairness_table(repo_root, tmp_path):
    folder = tmp_path / "my_fakes"
    labels = write_labelled_faces(folder)
    config = csv_config(repo_root, {"root": str(folder / "labels.csv")})
    config["datasets"]["mine"]["forgery"] = ["faceswap"]
    config["datasets"]["heldout"] = {
        "adapter": "csv",
        "root": str(folder / "labels.csv"),
        "group_by": ["group"],
        "split": "test_only",
        "forgery": False,
    }
    config["forgery"]["methods"] = ["faceswap"]
    config["training"]["train_methods"] = ["paste"]
    workdir = workdir_with(tmp_path, "labelled", config)
    snakemake(
        repo_root,
        workdir,
        "--cores",
        "2",
        "results/fairness_table.csv",
        "results/cross_manipulation.csv",
        "results/mine/samples.parquet",  # training and prediction read its per-method shares
    )

    results = workdir / "results"
    sources = pd.read_parquet(results / "mine" / "sources.parquet")
    assert len(sources) == len(labels) and sources["ok"].all(), sources["reason"].unique()
    assert sources.groupby("label").size().to_dict() == {0: 24, 1: 24}
    samples = pd.read_parquet(results / "mine" / "samples.parquet")
    fakes = samples[samples["label"] == 1]
    by_origin = fakes.groupby(["origin", "method"]).size().to_dict()
    assert {("imported", "paste"), ("imported", "tint"), ("generated", "faceswap")} <= set(
        by_origin
    ), by_origin
    # Forgeries are made of real faces only: one faceswap row per real image.
    faceswap = pd.read_parquet(results / "mine" / "forgeries" / "faceswap.parquet")
    assert set(faceswap["image_id"]) == set(sources.loc[sources["label"] == 0, "image_id"])
    # The detector trained on the imported 'paste' fakes next to the real images.
    log = pd.read_csv(results / "models" / "meso4" / "training_log.csv")
    assert len(log) == 1
    preds = pd.read_parquet(results / "predictions" / "meso4" / "mine" / "clean.parquet")
    assert {"real", "paste", "tint", "faceswap"} <= set(preds["method"])
    # The test-only dataset: every image in test, no forgery jobs, its fakes scored.
    held = pd.read_parquet(results / "heldout" / "sources.parquet")
    assert set(held["split"]) == {"test"} and held["ok"].all()
    assert not (results / "heldout" / "forgeries").exists()
    held_preds = pd.read_parquet(results / "predictions" / "meso4" / "heldout" / "clean.parquet")
    assert set(held_preds["method"]) == {"real", "paste", "tint"}
    assert set(held_preds["split"]) == {"test"}
    per_group = pd.read_csv(results / "fairness_per_group.csv")
    assert {"paste", "tint", "faceswap"} <= set(per_group["approach"])
    table = pd.read_csv(results / "fairness_table.csv")
    assert set(table["dataset"]) == {"mine", "heldout"} and "DPD" in set(table["metric"])
    # AUC per method, imported and generated alike, and the cross-manipulation row of the
    # one detector (trained on paste), tested on every method of each dataset.
    per_method = pd.read_csv(results / "detection_per_method.csv")
    assert set(per_method.loc[per_method["dataset"] == "mine", "method"]) == {
        "paste",
        "tint",
        "faceswap",
    }
    cross = pd.read_csv(results / "cross_manipulation.csv")
    assert list(cross["trained_on"]) == ["paste", "paste"]
    assert {"paste", "tint", "faceswap", "average"} <= set(cross.columns)
