"""Crops that keep the face, on real photographs cut the way released datasets cut them
(tests/helpers/released_cuts.py: UTKFace's dlib chips, RFW's 400-px squares, FaceForensics++'s 480p
and 720p frames) and written in those datasets' released layouts.

Each tree runs as the workflow runs it: the dataset's adapter, the faces stage with the
config's defaults (dlib HOG), the pairs, then every forgery method's classical backend. The
groups are assigned as tests/workflow/test_paper_configs.py's RFW fixture does: the real faces in turn
over the four RFW races. Before the crops kept the face, the default ``faces.border:
shrink`` fitted the margin to these framings and cut the chin: the methods made fakes for
0-1 of 8 UTKFace chips, 2-5 of 9 RFW images (every Indian face, at most one other per race)
and 0 of 9 frames, each failure "source landmarks outside the crop".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fairforge.video  # noqa: F401  (registers the faceforensics adapter)
from fairforge.config import load_schema
from fairforge.faces import landmarks_array, process_faces
from fairforge.faces.align import LANDMARK_BAND
from fairforge.faces.attributes import faces_with_attributes
from fairforge.faces.stage import stage_options
from fairforge.forgery import forge_shard
from fairforge.images import write_image
from fairforge.pairs import make_pairs
from fairforge.sources import build_sources
from released_cuts import RealFace, ffpp_frame, real_faces, rfw_image, utkface_chip

METHODS = ("faceswap", "simswap", "fastreen", "dualreen", "maskgan", "sbi", "xray", "fwa")
RACES = ("African", "Asian", "Caucasian", "Indian")  # test_paper_configs' RFW fixture
UTK_RACE_CODES = {"African": 1, "Asian": 2, "Caucasian": 0, "Indian": 3}
SEED = 11


@pytest.fixture(scope="module")
def faces() -> list[RealFace]:
    found = real_faces()
    assert len(found) == 9
    return found


def faces_defaults() -> dict:
    """The faces stage's options as the config schema's defaults give them."""
    schema = load_schema()["properties"]["faces"]["properties"]
    return stage_options({k: v["default"] for k, v in schema.items() if "default" in v})


@dataclass
class Run:
    sources: pd.DataFrame
    faces: pd.DataFrame
    forgeries: dict[str, pd.DataFrame]
    root: Path  # the images' root: a source path is relative to it (or absolute)
    centres: dict[str, tuple[float, float]]  # image file -> the cut face's centre in it


def utkface_tree(root: Path, faces: list[RealFace]) -> dict[str, tuple[float, float]]:
    """``{root}/{age}_{gender}_{race}_{date}.jpg.chip.jpg``, races as RFW's in turn."""
    centres = {}
    for k, face in enumerate(faces):
        race = UTK_RACE_CODES[RACES[k % 4]]
        path = root / f"{30 + k}_{k % 2}_{race}_2017011617452{k}.jpg.chip.jpg"
        chip, centres[str(path)] = utkface_chip(face)
        write_image(path, chip)
    return centres


def rfw_tree(root: Path, faces: list[RealFace]) -> dict[str, tuple[float, float]]:
    """``{root}/test/data/{Race}/{subject}/{subject}_0001.jpg``, RFW's archive layout."""
    centres = {}
    for k, face in enumerate(faces):
        path = root / "test" / "data" / RACES[k % 4] / f"m.{face.name}" / f"m.{face.name}_0001.jpg"
        image, centres[str(path)] = rfw_image(face)
        write_image(path, image)
    return centres


def ffpp_tree(root: Path, faces: list[RealFace]) -> dict[str, tuple[float, float]]:
    """FaceForensics++ originals as extracted frames,
    ``original_sequences/youtube/c23/images/{000..}/0000.png``, at 480p and 720p in turn,
    and the attributes csv that gives each video its race."""
    centres, rows = {}, []
    for k, face in enumerate(faces):
        vid = f"{k:03d}"
        frame, centre = ffpp_frame(face, height=(480, 720)[k % 2])
        path = root / "original_sequences/youtube/c23/images" / vid / "0000.png"
        write_image(path, frame)
        centres[str(path)] = centre
        rows.append({"id": vid, "race": RACES[k % 4]})
    pd.DataFrame(rows).to_csv(root / "ff_attributes.csv", index=False)
    return centres


TREES = {
    "utkface": (utkface_tree, {}),
    "rfw": (rfw_tree, {}),
    "faceforensics": (ffpp_tree, {"attributes": "ff_attributes.csv", "frames_per_video": 1}),
}


def run_tree(adapter: str, root: Path, out: Path, faces: list[RealFace], **faces_options) -> Run:
    """A released tree through the adapter, the faces stage (config defaults, overridden by
    ``faces_options``), the pairs and every method, as the workflow's jobs run them."""
    write_tree, options = TREES[adapter]
    centres = write_tree(root, faces)
    if adapter == "faceforensics":  # a video dataset's root is where its frames are decoded
        root, options = out / "video_source", {**options, "folder": str(root)}
    group_by = ["race"] if adapter != "utkface" else None
    sources = build_sources(adapter, root, adapter, group_by, split="test_only", **options)
    assert sources["ok"].all(), sources.loc[~sources["ok"], "reason"].tolist()
    found = process_faces(sources, root, out, "crops", **{**faces_defaults(), **faces_options})
    faces_df = faces_with_attributes(sources, found)
    pairs = make_pairs(faces_df, SEED)
    forged = {
        m: forge_shard(m, "classical", pairs, faces_df, out, f"forgeries/{m}", SEED)
        for m in METHODS
    }
    return Run(sources, found, forged, root, centres)


@pytest.fixture(scope="module")
def runs(faces, tmp_path_factory) -> dict[str, Run]:
    base = tmp_path_factory.mktemp("released")
    return {
        adapter: run_tree(adapter, base / adapter, base / f"{adapter}_results", faces)
        for adapter in TREES
    }


def success(run: Run) -> pd.DataFrame:
    """Fakes made over faces found, per method and group (the forgery stage's own rate)."""
    found = run.faces.merge(run.sources[["image_id", "group"]], on="image_id")
    found = found[found["ok"]]
    rows = []
    for method, fakes in run.forgeries.items():
        made = fakes.set_index("image_id")["ok"].reindex(found["image_id"], fill_value=False)
        for group, part in found.assign(made=made.to_numpy()).groupby("group"):
            rows.append({"method": method, "group": group, "n": len(part), "made": part.made.sum()})
    table = pd.DataFrame(rows)
    return table.assign(rate=table["made"] / table["n"])


def failures(run: Run) -> list[str]:
    return [
        f"{m}: {r.image_id}: {r.reason}"
        for m, fakes in run.forgeries.items()
        for r in fakes[~fakes["ok"]].itertuples()
    ]


@pytest.mark.parametrize("adapter", list(TREES))
def test_the_crop_holds_the_face_that_was_cut_with_all_68_landmarks(runs, adapter):
    run = runs[adapter]
    found = run.faces.merge(run.sources[["image_id", "path"]], on="image_id")
    # dlib's HOG finds all but t1's man turned to his left in the UTKFace chip.
    assert found["ok"].sum() >= (8 if adapter == "utkface" else 9), found["reason"].tolist()
    size = faces_defaults()["crop_size"]
    band = LANDMARK_BAND * size
    for row in found[found["ok"]].itertuples():
        x0, y0, x1, y1 = row.bbox
        cx, cy = run.centres[str(run.root / row.path)]  # an absolute path stays itself
        # The face found is the one that was cut (not a neighbour from the group photo).
        assert abs((x0 + x1) / 2 - cx) < (x1 - x0) / 2 and abs((y0 + y1) / 2 - cy) < (y1 - y0)
        lm = landmarks_array(row._asdict())
        assert lm.min() >= band - 1e-3 and lm.max() <= size - 1 - band + 1e-3, row.image_id


@pytest.mark.parametrize("adapter", ["utkface", "rfw"])
def test_every_method_forges_95_percent_of_utkface_and_rfw_faces(runs, adapter):
    table = success(runs[adapter])
    rates = table.groupby("method")[["made", "n"]].sum()
    assert set(rates.index) == set(METHODS)
    assert (rates["made"] / rates["n"] >= 0.95).all(), (rates, failures(runs[adapter]))


@pytest.mark.parametrize("adapter", list(TREES))
def test_every_group_gets_its_fakes_alike(runs, adapter):
    """Each method's success rate per group within 5 points of its best group's."""
    table = success(runs[adapter])
    assert set(table["group"]) == (
        {"White", "Black", "Asian", "Indian"} if adapter == "utkface" else set(RACES)
    )
    gap = table.groupby("method")["rate"].agg(lambda r: r.max() - r.min())
    assert (gap <= 0.05).all(), (table, failures(runs[adapter]))


def test_success_does_not_depend_on_framing(runs):
    """A method makes fakes for the same share of faces whether they were cut as UTKFace's
    chips, RFW's squares or FaceForensics++'s frames."""
    overall = {
        adapter: success(run).groupby("method")[["made", "n"]].sum()
        for adapter, run in runs.items()
    }
    rates = pd.DataFrame({a: t["made"] / t["n"] for a, t in overall.items()})
    assert ((rates.max(axis=1) - rates.min(axis=1)) <= 0.05).all(), rates


@pytest.mark.parametrize("adapter", ["rfw", "faceforensics"])
def test_shrink_fits_the_photo_but_keeps_the_face(runs, faces, tmp_path, adapter):
    """``faces.border: shrink`` still lowers the margin to what a tight photo holds, but never
    below the one that keeps every landmark in the crop: the chin it used to cut (on these
    framings the fitted margin fell to 0-0.16) stays, and every method forges every face."""
    run = run_tree(adapter, tmp_path / "tree", tmp_path / "out", faces, border="shrink")
    kept = runs[adapter]  # the default: the margin kept, the rest filled
    assert run.faces["ok"].all() and kept.faces["ok"].all()
    # Shrunk: less of each crop lies outside the photo, and the face is larger in it.
    assert (run.faces["outside_fraction"] <= kept.faces["outside_fraction"] + 1e-9).all()
    assert run.faces["outside_fraction"].mean() < kept.faces["outside_fraction"].mean()

    def height(frame: pd.DataFrame) -> float:
        return float(np.mean([np.ptp(landmarks_array(r)[:, 1]) for _, r in frame.iterrows()]))

    assert height(run.faces) > 1.1 * height(kept.faces)
    size, band = faces_defaults()["crop_size"], LANDMARK_BAND * faces_defaults()["crop_size"]
    for _, row in run.faces.iterrows():
        lm = landmarks_array(row)
        assert lm.min() >= band - 1e-3 and lm.max() <= size - 1 - band + 1e-3, row["image_id"]
    table = success(run)
    assert (table["rate"] == 1.0).all(), (table, failures(run))
