"""Every adapter's listing of a fixture tree, pinned to the recorded one.

An adapter's listing (ids, paths, subjects, attributes, labels, groups, splits, reasons; the
sources manifest before the files are opened) must not change when adapters move between
modules or change shape: manifests stay byte-identical. Each case writes a tiny tree in its
dataset's released layout (the builders of the adapters' own tests), lists it as the
workflow does (:func:`fairforge.sources.list_dataset`: root, options and plan from the
dataset block) and compares the listing, the plan (``count_items``) and the imported methods
with ``tests/data/adapter_listings/``. A change that alters a listing on purpose re-records
them (``python tests/unit/test_adapter_listings.py``) and names the change in its commit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fairforge.video  # noqa: F401  (registers the frame sampler and synthetic_video)
from fairforge.images import write_image
from fairforge.sources import ADAPTERS, image_id_from_path, list_dataset, resolved_split

sys.path.insert(0, str(Path(__file__).parents[1] / "helpers"))  # when run as a script
from source_trees import folder_tree, vggface2_tree, write_jpeg
from video_trees import deeperforensics_tree, dfdc_tree, faceforensics_tree, noise_video, uadfv_tree

RECORDED = Path(__file__).parents[1] / "data" / "adapter_listings"
SPLIT3 = {"train": 0.6, "val": 0.2, "test": 0.2}
TMP = "{tmp}"


def rfw(base: Path) -> dict:
    folder_tree(base / "rfw" / "data", ["African", "Asian", "Caucasian", "Indian"])
    return {"adapter": "rfw", "root": str(base / "rfw"), "split": SPLIT3}


def utkface(base: Path) -> dict:
    root = base / "UTKFace"
    for r in range(5):
        for i in range(3):
            write_jpeg(root / "part1" / f"{20 + i}_{i % 2}_{r}_2017010{i}{r}.jpg.chip.jpg")
    write_jpeg(root / "part1" / "39_1_20170116174525125.jpg.chip.jpg")  # a field short
    write_jpeg(root / "part2" / "30_0_7_2017.jpg")  # an unknown race code
    return {"adapter": "utkface", "root": str(root), "split": SPLIT3, "group_by": ["race"]}


def fairface(base: Path) -> dict:
    root = base / "fairface"
    for split in ("train", "val"):
        rows = []
        for i, (race, gender) in enumerate(
            [(r, g) for r in ("East Asian", "Black", "White") for g in ("Male", "Female")]
        ):
            write_jpeg(root / split / f"{i + 1}.jpg")
            age = "" if (split, i) == ("val", 5) else "20-29"  # a missing label
            rows.append((f"{split}/{i + 1}.jpg", age, gender, race, str(i % 2 == 1)))
        pd.DataFrame(rows, columns=["file", "age", "gender", "race", "service_test"]).to_csv(
            root / f"fairface_label_{split}.csv", index=False
        )
    return {"adapter": "fairface", "root": str(root), "split": SPLIT3}


def diveface(base: Path) -> dict:
    names = ["HA4K_120", "HB4K_120", "HN4K_120", "MA4K_120", "MB4K_120", "MN4K_120"]
    folder_tree(base / "dive" / "4K_120", names, subjects=3, images=2)
    return {"adapter": "diveface", "root": str(base / "dive"), "split": "official"}


def vggface2(base: Path) -> dict:
    root = vggface2_tree(base / "vggface2")
    return {"adapter": "vggface2", "root": str(root), "split": "official"}


def csv_table(base: Path) -> dict:
    rows = []
    for g in ("a", "b"):
        for k in range(3):
            for j in range(2):
                rel = f"img/{g}{k}_{j}.png"
                write_jpeg(base / "data" / rel)
                method = "swap" if j else "real"
                rows.append((rel, f"{g}{k}", g, "young" if j else "old", "", method))
    outside = base / "elsewhere" / "x.jpg"
    write_jpeg(outside)
    rows.append((str(outside), "a9", "a", "old", "1", ""))  # a fake without its method
    write_jpeg(base / "data" / "img" / "c.png")
    rows.append(("img/c.png", "", "a", "old", "0", "real"))  # no subject
    columns = ["path", "subject_id", "group", "age_bin", "label", "method"]
    pd.DataFrame(rows, columns=columns).to_csv(base / "data" / "labels.csv", index=False)
    return {"adapter": "csv", "root": str(base / "data" / "labels.csv"), "split": SPLIT3}


def synthetic(base: Path) -> dict:
    options = {"subjects_per_group": 3, "images_per_subject": 1, "tones": ["tone1", "tone2"]}
    return {
        "adapter": "synthetic",
        "root": str(base / "unused"),
        "split": SPLIT3,
        "options": options,
    }


def synthetic_video(base: Path) -> dict:
    options = {
        "subjects_per_group": 1,
        "clips_per_subject": 1,
        "seconds": 0.4,
        "size": 64,
        "tones": ["tone1", "tone2"],
        "frames_per_video": 3,
        "workers": 1,
    }
    return {"adapter": "synthetic_video", "split": "test_only", "options": options}


def video(base: Path) -> dict:
    """The generic adapter: videos, a folder of frames and an image listed in its labels csv
    (each decoded by ffmpeg, as the adapter documents a folder of videos), real and fake, one
    row whose label and method disagree."""
    folder = base / "vids"
    rows = []
    for i, (label, method) in enumerate([("0", "real"), ("1", "lipsync"), ("", "swap")]):
        noise_video(folder / f"v{i}.mp4", i)
        rows.append((f"v{i}.mp4", f"s{i % 2}", "g", label, method))
    for j in range(2):
        write_image(folder / "frames" / f"{j:04d}.png", np.full((16, 16, 3), 40 * j, np.uint8))
    rows.append(("frames", "s3", "g", "0", "real"))
    write_image(folder / "still.png", np.full((16, 16, 3), 90, np.uint8))
    rows.append(("still.png", "s3", "g", "0", "real"))
    rows.append(("v0.mp4", "s4", "g", "0", "swap"))  # a real with a method
    pd.DataFrame(rows, columns=["path", "subject_id", "group", "label", "method"]).assign(
        video_id=["v0", "v1", "v2", "frames", "still", "v0_again"]
    ).to_csv(folder / "labels.csv", index=False)
    options = {"frames_per_video": 2, "workers": 1}
    return {"adapter": "video", "root": str(folder), "split": "test_only", "options": options}


def faceforensics(base: Path) -> dict:
    ff = faceforensics_tree(base / "FF")
    options = {"frames_per_video": 3, "attributes": "ff_attributes.csv"}
    return {
        "adapter": "faceforensics",
        "root": str(ff),
        "split": "official",
        "group_by": ["race"],
        "options": options,
    }


def dfdc(base: Path) -> dict:
    root = dfdc_tree(base / "dfdc", size=16)
    meta = json.loads((root / "dfdc_train_part_1" / "metadata.json").read_text())
    meta["gone.mp4"] = {"label": "FAKE", "original": "r2.mp4"}  # listed, not on disk
    meta["odd.mp4"] = {"label": "MAYBE"}
    (root / "dfdc_train_part_1" / "metadata.json").write_text(json.dumps(meta))
    return {
        "adapter": "dfdc",
        "root": str(root),
        "split": SPLIT3,
        "options": {"frames_per_video": 2},
    }


def deeperforensics(base: Path) -> dict:
    targets = base / "FF" / "original_sequences/youtube/c23/videos"
    root = deeperforensics_tree(base / "DeeperForensics-1.0", targets, size=16)
    options = {
        "frames_per_video": 2,
        "targets": str(targets),
        "source_videos": True,
        "variants": ["end_to_end", "end_to_end_level_3"],
    }
    return {
        "adapter": "deeperforensics",
        "root": str(root),
        "split": "official",
        "options": options,
    }


def uadfv(base: Path) -> dict:
    root = uadfv_tree(base / "UADFV", pairs=5)
    options = {"frames_per_video": 2}
    return {"adapter": "uadfv", "root": str(root), "split": "3:1:1", "options": options}


CASES = {
    f.__name__: f
    for f in (
        rfw,
        utkface,
        fairface,
        diveface,
        vggface2,
        csv_table,
        synthetic,
        synthetic_video,
        video,
        faceforensics,
        dfdc,
        deeperforensics,
        uadfv,
    )
}


def _normal(value, base: Path):
    """A cell with the tree's folder named ``{tmp}`` (also in an id made of an absolute
    path); dicts as sorted JSON."""
    if isinstance(value, dict):
        value = json.dumps(value, sort_keys=True)
    if isinstance(value, str):
        return value.replace(str(base), TMP).replace(image_id_from_path(base), TMP)
    return value


def listed(case: str, base: Path) -> tuple[str, dict]:
    """The listing of ``case``'s tree as csv text, and its plan and imported methods."""
    dataset_cfg = CASES[case](base)
    adapter = ADAPTERS.create(dataset_cfg["adapter"])
    root = adapter.resolve_root(case, dataset_cfg, base / "results")
    split = resolved_split(dataset_cfg["adapter"], dataset_cfg["split"])
    listing = list_dataset(case, dataset_cfg, root, split, seed=3)
    text = listing.map(lambda v: _normal(v, base)).to_csv(index=False, lineterminator="\n")
    plan = {
        "count_items": int(adapter.count_items(case, dataset_cfg)),
        "imported_methods": adapter.imported_methods(case, dataset_cfg),
    }
    return text, plan


@pytest.mark.parametrize("case", sorted(CASES))
def test_listing_is_the_recorded_one(case, tmp_path):
    text, plan = listed(case, tmp_path)
    recorded = json.loads((RECORDED / "plans.json").read_text())
    assert plan == recorded[case]
    assert text == (RECORDED / f"{case}.csv").read_text()


def record(folder: Path = RECORDED) -> None:
    """Write every case's listing and plan into ``folder``."""
    import tempfile

    folder.mkdir(parents=True, exist_ok=True)
    plans = {}
    for case in sorted(CASES):
        with tempfile.TemporaryDirectory() as tmp:
            text, plans[case] = listed(case, Path(tmp))
        (folder / f"{case}.csv").write_text(text)
        print(f"{case}: {text.count(chr(10)) - 1} rows")
    (folder / "plans.json").write_text(json.dumps(plans, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    record(Path(sys.argv[1]) if len(sys.argv) > 1 else RECORDED)
