"""Folder, VGGFace2 and labelled-CSV trees of synthetic faces that source tests write, and the subject-split check."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pandas as pd

SPLIT3 = {"train": 0.6, "val": 0.2, "test": 0.2}


def write_jpeg(path: Path, width: int = 40, height: int = 32, seed: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    assert cv2.imwrite(str(path), pixels)


def folder_tree(base: Path, groups: list[str], subjects: int = 3, images: int = 2) -> None:
    """``base/{group}/{group}_s{k}/{group}_s{k}_{j}.jpg`` with sizes varying by image."""
    for g in groups:
        for k in range(subjects):
            for j in range(images):
                write_jpeg(
                    base / g / f"{g}_s{k}" / f"{g}_s{k}_{j}.jpg", 40 + j, 32 + k, seed=10 * k + j
                )


def check_subject_split(df: pd.DataFrame, fractions=SPLIT3) -> None:
    labelled = df[df["group"] != ""]
    per_subject = labelled.groupby("subject_id")["split"].nunique()
    assert (per_subject == 1).all(), "a subject is in two splits"
    active = {s for s, f in fractions.items() if f > 0}
    for group, part in labelled.groupby("group"):
        assert set(part["split"]) == active, f"group {group} misses a split"


def vggface2_tree(root: Path) -> Path:
    """Identity folders under train/ and test/, and the release's identity_meta.csv."""
    identities = {"train": ["n000001", "n000002", "n000003"], "test": ["n000009"]}
    for k, (folder, ids) in enumerate(identities.items()):
        for i, identity in enumerate(ids):
            for j in range(2):
                write_jpeg(root / folder / identity / f"000{j}_01.jpg", seed=10 * k + i + j)
    (root / "meta").mkdir()
    # As the release writes it: spaces after the commas, Gender m/f; n000003 is unlabelled.
    (root / "meta" / "identity_meta.csv").write_text(
        'Class_ID, Name, Sample_Num, Flag, Gender\nn000001, "A_B", 2, 1, m\n'
        'n000002, "C_D", 2, 1, f\nn000009, "E_F", 2, 0, f\n'
    )
    return root


def labelled_csv(folder: Path, extra: list[dict] | None = None) -> Path:
    """Six subjects per group, two real images each; each subject has one fake of it made
    with the face of its partner (0-1, 2-3, 4-5; method by group)."""
    rows = []
    for g, method in (("a", "deepfakes"), ("b", "face2face")):
        for k in range(6):
            subject, donor = f"{g}{k}", f"{g}{k ^ 1}"
            for j in range(2):
                rel = f"real/{subject}_{j}.png"
                write_jpeg(folder / rel, seed=k * 10 + j)
                rows.append({"path": rel, "subject_id": subject, "group": g, "label": "0"})
            rel = f"fake/{subject}_{donor}.png"
            write_jpeg(folder / rel, seed=100 + k)
            rows.append(
                {
                    "path": rel,
                    "subject_id": subject,
                    "group": g,
                    "label": "1",
                    "method": method,
                    "source_subject": donor,
                    "target_subject": subject,
                }
            )
    table = pd.DataFrame(rows + (extra or [])).fillna("")
    table.to_csv(folder / "labels.csv", index=False)
    return folder / "labels.csv"
