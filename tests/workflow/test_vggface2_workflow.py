"""VGGFace2 as released (identity folders under train/ and test/, meta/identity_meta.csv)
through a real Snakemake run of the ranking study it serves, ranked by gender."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from fairforge.images import write_image
from fairforge.sources.synthetic import render_face, sample_subject, sample_view
from snakemake_run import snakemake

pytestmark = pytest.mark.workflow

# Gender from identity_meta.csv; the tone only varies the rendered faces.
IDENTITIES = {
    "test": [(f"n00010{k}", "m" if k % 2 else "f") for k in range(8)],
    "train": [("n000001", "m"), ("n000002", "f")],
}
IMAGES_PER_IDENTITY = 3


def write_vggface2(root: Path) -> int:
    """The release's layout of rendered faces; returns the number of image files."""
    rows, count = ["Class_ID, Name, Sample_Num, Flag, Gender"], 0
    for folder, identities in IDENTITIES.items():
        for k, (identity, gender) in enumerate(identities):
            subject = sample_subject(
                5, identity, f"tone{1 + k % 4}", "male" if gender == "m" else "female"
            )
            for j in range(IMAGES_PER_IDENTITY):
                image = render_face(subject, sample_view(5, f"{identity}_{j}"), 160)
                write_image(root / folder / identity / f"{j:04d}_01.jpg", image)
                count += 1
            rows.append(f'{identity}, "Name_{k}", {IMAGES_PER_IDENTITY}, 1, {gender}')
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "identity_meta.csv").write_text("\n".join(rows) + "\n")
    return count


def test_vggface2_release_runs_through_the_ranking_study(repo_root, tmp_path):
    n_files = write_vggface2(tmp_path / "VGGFace2")
    config = yaml.safe_load((repo_root / "tests" / "data" / "tiny_config.yaml").read_text())
    config["datasets"] = {
        "vggface2": {
            "adapter": "vggface2",
            "root": str(tmp_path / "VGGFace2"),
            "group_by": ["gender"],
            "split": "official",
            "forgery": False,
        }
    }
    config["ranking"].update(dataset="vggface2", splits=["test"], encoders={"dlib_resnet": {}}, k=3)
    workdir = tmp_path / "run"
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    snakemake(repo_root, workdir, "--cores", "2", "results/exposure_table.csv")

    results = workdir / "results"
    sources = pd.read_parquet(results / "vggface2" / "sources.parquet")
    assert len(sources) == n_files and sources["ok"].all()  # nothing lost
    assert set(sources["split"]) == {"train", "test"}
    assert set(sources["group"]) == {"male", "female"}
    table = pd.read_csv(results / "exposure_table.csv")
    assert set(table["encoder"]) == {"dlib_resnet"}
    assert (table["n_identities"] <= len(IDENTITIES["test"])).all()
    assert {"exposure_male", "exposure_female"} <= set(table.columns)
