"""Synthetic faces in a folder tree and a tiny config around them, for the workflow tests' runs."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import yaml

from fairforge.images import write_image
from fairforge.sources.synthetic import render_face, sample_subject, sample_view

# group -> (the renderer's tone and presentation that draw its faces)
GROUPS = {"light": ("tone1", "female"), "dark": ("tone4", "male")}


# The test-only datasets: two subjects per group (a swap target), two images each.
SIZE = 160


def face(seed: int, subject: str, group: str, view: int, size: int = SIZE):
    tone, gender = GROUPS[group]
    return render_face(
        sample_subject(seed, subject, tone, gender), sample_view(seed, f"{subject}_{view}"), size
    )


def write_folder_tree(base: Path, group_dirs: dict[str, str], seed: int) -> None:
    """``base/{group folder}/{subject}/{0,1}.jpg``: RFW's and DiveFace's layout."""
    for folder, group in group_dirs.items():
        for k in range(2):
            for j in range(2):
                write_image(
                    base / folder / f"{group}{seed}{k}" / f"{j}.jpg", face(seed, f"{k}", group, j)
                )


def csv_config(repo_root: Path, dataset: dict) -> dict:
    """tests/data/tiny_config.yaml cut to one csv dataset, two methods, meso4 for one epoch
    on clean images, without the ranking study."""
    config = yaml.safe_load((repo_root / "tests" / "data" / "tiny_config.yaml").read_text())
    config["datasets"] = {"mine": {"adapter": "csv", "group_by": ["group"], **dataset}}
    config["faces"]["upsample"] = 1  # the 160-px renders' faces are ~70 px, under HOG's 80
    config["forgery"]["methods"] = ["faceswap", "sbi"]
    config["variants"] = ["clean"]
    config["ranking"] = {"enabled": False}
    config["training"]["epochs"] = 1
    config["detectors"] = {"meso4": {"arch": "meso4", "input_size": 64}}
    return config


# What a cut run is made for: the tables of the SLURM test's comparison and of the
# partial-rerun tests (training, clean and variant predictions, ranking, failures).
CUT_TARGETS = (
    "results/fairness_table.csv",
    "results/failures_per_group.csv",
    "results/exposure_table.csv",
    "results/detection_table.csv",
    "results/robustness_table.csv",
)


def cut_config(repo_root: Path) -> dict:
    """tests/data/tiny_config.yaml cut to what a cluster run must prove and a grown run can
    add to: one image dataset, two forgery methods, a clean and a video variant, the ranking
    study; two shards of every sharded stage (prediction included). A SLURM job costs seconds
    of overhead whatever its work, and the full tiny config is over a hundred of them."""
    config = yaml.safe_load((repo_root / "tests" / "data" / "tiny_config.yaml").read_text())
    first = next(iter(config["datasets"]))
    config["datasets"] = {first: config["datasets"][first]}
    config["forgery"]["methods"] = ["faceswap", "sbi"]
    config["variants"] = ["clean", "vid_h264@40"]
    config["shard_size"] = config["inference"]["shard_size"] = 40
    return config


def workdir_with(tmp_path: Path, name: str, config: dict) -> Path:
    workdir = tmp_path / name
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return workdir


SUBJECTS = 6  # partners 0-1, 2-3, 4-5: one pair per group in each split


LABELLED_SIZE = 256


def face_mask(size: int = LABELLED_SIZE) -> np.ndarray:
    mask = np.zeros((size, size), np.float32)
    cv2.ellipse(mask, (size // 2, int(size * 0.53)), (size // 5, size // 4), 0, 0, 360, 1.0, -1)
    return cv2.GaussianBlur(mask, (0, 0), size / 40)[..., None]


def write_labelled_faces(folder: Path) -> pd.DataFrame:
    rows, mask = [], face_mask()
    for group, (tone, gender) in GROUPS.items():
        identities = {k: sample_subject(7, f"{group}_{k}", tone, gender) for k in range(SUBJECTS)}
        for k, identity in identities.items():
            subject, partner = f"{group}_{k}", f"{group}_{k ^ 1}"
            for j in range(2):
                rel = f"real/{subject}_{j}.png"
                write_image(
                    folder / rel,
                    render_face(identity, sample_view(7, f"{subject}_{j}"), LABELLED_SIZE),
                )
                rows.append({"path": rel, "subject_id": subject, "group": group, "label": 0})
            view = sample_view(7, f"{subject}_fake")
            photo = render_face(identity, view, LABELLED_SIZE).astype(np.float32)
            donor = render_face(identities[k ^ 1], view, LABELLED_SIZE).astype(np.float32)
            tinted = photo * np.array([1.25, 0.9, 0.8], np.float32)
            for method, edited in (("paste", donor), ("tint", tinted)):
                fake = np.clip(photo * (1 - mask) + edited * mask, 0, 255).astype(np.uint8)
                rel = f"fake/{method}/{subject}.png"
                write_image(folder / rel, fake)
                rows.append(
                    {
                        "path": rel,
                        "subject_id": subject,
                        "group": group,
                        "label": 1,
                        "method": method,
                        "source_subject": partner if method == "paste" else "",
                        "target_subject": subject,
                    }
                )
    labels = pd.DataFrame(rows).fillna("")
    labels.to_csv(folder / "labels.csv", index=False)
    return labels
