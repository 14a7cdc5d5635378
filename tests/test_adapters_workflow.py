"""A csv dataset written exactly as the README documents it, run through the workflow.

The README's example is ``datasets: {mine: {adapter: csv, root: /data/my_faces/labels.csv,
group_by: [group]}}`` with csv columns path, subject_id, group (+ any attributes) and paths
relative to the csv's folder; a folder root with ``options: {table: labels.csv}`` is the
other documented form. The faces are rendered by the synthetic renderer and saved as plain
JPEG and PNG files, so the workflow sees them as any user's photos.
"""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from fairforge.images import write_image
from fairforge.sources.synthetic import render_face, sample_subject, sample_view
from snakemake_run import snakemake

pytestmark = pytest.mark.workflow

# group -> (the renderer's tone and presentation that draw its faces)
GROUPS = {"light": ("tone1", "female"), "dark": ("tone4", "male")}
# Face swaps take their target from another subject of the same group and split: two per
# group in each of train, val and test.
SUBJECTS_PER_GROUP = 6
IMAGES_PER_SUBJECT = 2


def write_faces(folder: Path) -> pd.DataFrame:
    """Rendered faces under ``folder/images`` and ``folder/labels.csv`` listing them."""
    rows = []
    for group, (tone, gender) in GROUPS.items():
        for k in range(SUBJECTS_PER_GROUP):
            subject = f"{group}_{k}"
            identity = sample_subject(7, subject, tone, gender)
            for j in range(IMAGES_PER_SUBJECT):
                # Both suffixes a user's folder would hold; the csv says which file is which.
                rel = f"images/{group}/{subject}/{j}.{'jpg' if j % 2 == 0 else 'png'}"
                write_image(
                    folder / rel, render_face(identity, sample_view(7, f"{subject}_{j}"), 256)
                )
                rows.append(
                    {
                        "path": rel,
                        "subject_id": subject,
                        "group": group,
                        "lighting": "indoor" if j == 0 else "outdoor",
                    }
                )
    labels = pd.DataFrame(rows)
    labels.to_csv(folder / "labels.csv", index=False)
    return labels


def csv_config(repo_root: Path, dataset: dict) -> dict:
    """tests/data/tiny_config.yaml cut to one csv dataset, two methods, meso4 for one epoch
    on clean images, without the ranking study."""
    config = yaml.safe_load((repo_root / "tests" / "data" / "tiny_config.yaml").read_text())
    config["datasets"] = {"mine": {"adapter": "csv", "group_by": ["group"], **dataset}}
    config["forgery"]["methods"] = ["faceswap", "sbi"]
    config["variants"] = ["clean"]
    config["ranking"] = {"enabled": False}
    config["training"]["epochs"] = 1
    config["detectors"] = {"meso4": {"arch": "meso4", "input_size": 64}}
    return config


def workdir_with(tmp_path: Path, name: str, config: dict) -> Path:
    workdir = tmp_path / name
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return workdir


def test_csv_dataset_as_documented_runs_to_the_fairness_table(repo_root, tmp_path):
    folder = tmp_path / "my_faces"
    labels = write_faces(folder)

    as_file = workdir_with(
        tmp_path, "as_file", csv_config(repo_root, {"root": str(folder / "labels.csv")})
    )
    snakemake(repo_root, as_file, "--cores", "2", "results/fairness_table.csv")

    results = as_file / "results"
    sources = pd.read_parquet(results / "mine" / "sources.parquet")
    assert len(sources) == len(labels) and sources["ok"].all(), sources["reason"].unique()
    # Paths stay relative to the csv's folder, as the csv wrote them.
    assert set(sources["path"]) == set(labels["path"])
    assert set(sources["group"]) == {"light", "dark"}
    assert set(sources["split"]) == {"train", "val", "test"}
    table = pd.read_csv(results / "fairness_table.csv")
    assert {"dataset", "metric", "meso4"} <= set(table.columns)
    assert set(table["dataset"]) == {"mine"} and "DPD" in set(table["metric"])
    rate = pd.read_csv(results / "mine" / "face_detection_rate.csv")
    assert set(rate["group"]) == {"light", "dark", "(all)"}
    # Every image found a target in its group and split, read through the csv's paths.
    assert pd.read_parquet(results / "mine" / "forgeries" / "faceswap.parquet")["ok"].all()

    # The folder form plans the same run and lists the same sources, byte for byte.
    as_folder = workdir_with(
        tmp_path,
        "as_folder",
        csv_config(repo_root, {"root": str(folder), "options": {"table": "labels.csv"}}),
    )
    plan = snakemake(repo_root, as_folder, "-n", "--cores", "1", "results/fairness_table.csv")
    assert "fairness_table" in plan.stdout + plan.stderr
    snakemake(repo_root, as_folder, "--cores", "2", "results/mine/sources.parquet")
    assert (as_folder / "results" / "mine" / "sources.parquet").read_bytes() == (
        results / "mine" / "sources.parquet"
    ).read_bytes()
