"""Every adapter through the workflow: one Snakemake run on fixture trees in each layout.

The README's datasets block names the adapters a user points fairforge at: ``rfw``,
``diveface``, ``fairface``, ``utkface`` (with UTKFace's ``.jpg.chip.jpg`` names), ``csv`` in
both documented forms (the csv file as ``root``; a folder ``root`` and ``options.table``) and
``video`` (a folder of videos and its labels csv). Each tree is written here as the public
dataset lays it out, with faces from the synthetic renderer saved as plain JPEG and PNG files,
so the workflow sees them as any user's photos. The csv dataset also holds the hostile files
of tests/unit/test_hostile_files.py, whose reasons the run must record without losing a row.

One run reaches ``results/fairness_table.csv`` for all seven datasets: the csv dataset trains
the detector (one epoch), the others are test-only, one forgery method, ranking off.
"""

from pathlib import Path

import pandas as pd
import pytest

from fairforge.images import write_image
from fairforge.sources import image_id_from_path
from fairforge.sources.base import iter_images
from fairforge.video.clips import synthetic_videos
from hostile_files import EXPECTED, GOOD, REDUCE_ABOVE, write_hostile
from snakemake_run import snakemake
from workflow_trees import GROUPS, SIZE, csv_config, face, workdir_with, write_folder_tree

pytestmark = pytest.mark.workflow

# Face swaps take their target from another subject of the same group and split: two per
# group in each of train, val and test.
SUBJECTS_PER_GROUP = 6
IMAGES_PER_SUBJECT = 2


def write_faces(folder: Path) -> pd.DataFrame:
    """Rendered faces under ``folder/images`` and ``folder/labels.csv`` listing them."""
    rows = []
    for group in GROUPS:
        for k in range(SUBJECTS_PER_GROUP):
            subject = f"{group}_{k}"
            for j in range(IMAGES_PER_SUBJECT):
                # Both suffixes a user's folder would hold; the csv says which file is which.
                rel = f"images/{group}/{subject}/{j}.{'jpg' if j % 2 == 0 else 'png'}"
                write_image(folder / rel, face(7, subject, group, j, 256))
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


def write_fairface(root: Path) -> None:
    """FairFace's ``val/{n}.jpg`` (faces padded by 0.25, 224 px) and its label csv."""
    rows = []
    for n in range(8):
        group = list(GROUPS)[n % 2]
        write_image(root / "val" / f"{n + 1}.jpg", face(11, str(n), group, 0, 224))
        race = "Black" if group == "dark" else "White"
        rows.append((f"val/{n + 1}.jpg", "20-29", "Female", race, "True"))
    pd.DataFrame(rows, columns=["file", "age", "gender", "race", "service_test"]).to_csv(
        root / "fairface_label_val.csv", index=False
    )


def write_utkface(root: Path) -> None:
    """UTKFace's aligned and cropped 200-px chips, ``age_gender_race_date.jpg.chip.jpg``,
    and one file whose name lacks a field (as a few official ones do)."""
    for n in range(8):
        group = list(GROUPS)[n % 2]
        race = 1 if group == "dark" else 0
        name = f"{25 + n}_{n % 2}_{race}_2017011{n}1234567{n}.jpg.chip.jpg"
        write_image(root / "UTKFace" / name, face(13, str(n), group, 0, 200))
    write_image(root / "UTKFace" / "39_1_20170116174525125.jpg.chip.jpg", face(13, "x", "dark", 0))


def write_videos(root: Path) -> pd.DataFrame:
    """A folder of H.264 clips and the ``video`` adapter's labels.csv (path, subject_id,
    group)."""
    # One subject of each presentation per tone: two subjects per group.
    clips = synthetic_videos(
        root,
        subjects_per_group=1,
        clips_per_subject=1,
        seed=5,
        seconds=0.2,
        size=SIZE,
        tones=("tone1", "tone4"),
    )
    labels = pd.DataFrame(
        {"path": clips["path"], "subject_id": clips["subject_id"], "group": clips["tone"]}
    )
    labels.to_csv(root / "labels.csv", index=False)
    return labels


FRAMES_PER_VIDEO = 2


def all_adapters_config(repo_root: Path, trees: dict[str, Path]) -> dict:
    """tests/data/tiny_config.yaml cut to the seven datasets, faceswap, meso4 for one epoch
    on clean images, without the ranking study."""
    config = csv_config(repo_root, {"root": str(trees["mine"] / "labels.csv")})
    test_only = {"split": "test_only"}
    config["datasets"].update(
        theirs={
            "adapter": "csv",
            "root": str(trees["theirs"]),
            "options": {"table": "theirs.csv"},
            "group_by": ["group"],
            **test_only,
        },
        rfw={
            "adapter": "rfw",
            "root": str(trees["rfw"] / "test" / "data"),
            "options": {"races": ["African", "Caucasian"]},
            "group_by": ["race"],
            **test_only,
        },
        diveface={"adapter": "diveface", "root": str(trees["diveface"]), **test_only},
        fairface={
            "adapter": "fairface",
            "root": str(trees["fairface"]),
            "options": {"labels": "fairface_label_val.csv"},
            "group_by": ["race"],
            **test_only,
        },
        utkface={"adapter": "utkface", "root": str(trees["utkface"] / "UTKFace"), **test_only},
        video={
            "adapter": "video",
            "root": str(trees["video"]),
            "options": {"frames_per_video": FRAMES_PER_VIDEO},
            "group_by": ["group"],
            **test_only,
        },
    )
    config["forgery"]["methods"] = ["faceswap"]
    config["images"] = {"reduce_above": REDUCE_ABOVE}
    config["metrics"]["bootstrap"] = 20
    return config


def write_trees(tmp_path: Path) -> tuple[dict[str, Path], dict[str, pd.DataFrame]]:
    """Every dataset's fixture tree under ``tmp_path``, and the tables that list them."""
    trees = {name: tmp_path / name for name in ("mine", "rfw", "diveface", "fairface")}
    trees.update(utkface=tmp_path / "utkface", video=tmp_path / "video")
    # The csv file form: rendered faces and every hostile file, each with a subject and group
    # of the faces so that groups and splits stay as they are.
    write_hostile(trees["mine"])
    labels = write_faces(trees["mine"])  # its labels.csv replaces the hostile fixture's
    hostile = [rel for rel, _ in EXPECTED.values()]
    subjects = labels.drop_duplicates("subject_id").reset_index(drop=True)
    extra = pd.DataFrame(
        {
            "path": hostile,
            "subject_id": [subjects["subject_id"][k % len(subjects)] for k in range(len(hostile))],
            "group": [subjects["group"][k % len(subjects)] for k in range(len(hostile))],
            "lighting": "indoor",
        }
    )
    mine = pd.concat([labels, extra], ignore_index=True)
    mine.to_csv(trees["mine"] / "labels.csv", index=False)
    # The folder form: the same folder, another table in it (the hostile fixture's good faces).
    trees["theirs"] = trees["mine"]
    theirs = pd.DataFrame(
        {
            "path": list(GOOD),
            "subject_id": list(GOOD.values()),
            "group": ["light" if s.startswith("a") else "dark" for s in GOOD.values()],
        }
    )
    theirs.to_csv(trees["mine"] / "theirs.csv", index=False)
    write_folder_tree(trees["rfw"] / "test" / "data", {"African": "dark", "Caucasian": "light"}, 1)
    write_folder_tree(trees["diveface"] / "4K_120", {"HN4K_120": "dark", "HB4K_120": "light"}, 2)
    write_fairface(trees["fairface"])
    write_utkface(trees["utkface"])
    videos = write_videos(trees["video"])

    return trees, {"faces": labels, "mine": mine, "videos": videos}


def check_run(results: Path, trees: dict[str, Path], tables: dict[str, pd.DataFrame]) -> None:
    """What the run of :func:`test_every_adapter_runs_to_the_fairness_table_and_keeps_every_file`
    must have written."""
    labels, mine, videos = tables["faces"], tables["mine"], tables["videos"]

    def sources(name: str) -> pd.DataFrame:
        return pd.read_parquet(results / name / "sources.parquet")

    # Nothing lost: one row per file on disk (per csv row for the tables, per sampled frame
    # for the videos), every id unique, and every good file usable.
    on_disk = {
        "rfw": iter_images(trees["rfw"] / "test" / "data"),
        "diveface": iter_images(trees["diveface"]),
        "fairface": iter_images(trees["fairface"]),
        "utkface": iter_images(trees["utkface"]),
    }
    for name, files in on_disk.items():
        rows = sources(name)
        assert len(rows) == len(files) == (9 if name == "utkface" else 8), name
        assert rows["image_id"].is_unique, name
    assert sources("rfw")["ok"].all() and sources("diveface")["ok"].all()
    assert set(sources("rfw")["group"]) == {"African", "Caucasian"}
    # DiveFace's folders name race and gender, its default groups.
    assert set(sources("diveface")["group"]) == {"Black_male", "Caucasian_male"}
    assert set(sources("fairface")["group"]) == {"Black", "White"}
    utk = sources("utkface").set_index("path")
    # The chip suffix leaves the id; the name without its race field is kept with why.
    assert utk.loc["25_0_0_2017011012345670.jpg.chip.jpg", "image_id"] == (
        "25_0_0_2017011012345670"
    )
    assert utk["ok"].sum() == 8
    assert utk.loc["39_1_20170116174525125.jpg.chip.jpg", "reason"].startswith("malformed")
    video = sources("video")
    assert len(video) == len(videos) * FRAMES_PER_VIDEO and video["ok"].all()
    assert set(video["group"]) == {"tone1", "tone4"}

    # Both csv forms: paths stay relative to the csv's folder, every row kept.
    rows = sources("mine")
    assert len(rows) == len(mine) and set(rows["path"]) == set(mine["path"])
    assert set(rows["split"]) == {"train", "val", "test"}
    reasons = dict(zip(rows["path"], rows["reason"]))
    ok = dict(zip(rows["path"], rows["ok"]))
    assert all(ok[rel] for rel in labels["path"])
    for name, (rel, reason) in EXPECTED.items():
        if reason is None:
            assert ok[rel], (name, reasons[rel])
        else:
            assert not ok[rel] and reasons[rel].startswith(reason), (name, reasons[rel])
    assert sources("theirs")["ok"].all() and set(sources("theirs")["path"]) == set(GOOD)

    # Every stage after the sources keeps a row per source image, for every dataset.
    for name in ("mine", "theirs", *on_disk, "video"):
        ids = sorted(sources(name)["image_id"])
        faces = pd.read_parquet(results / name / "faces.parquet")
        assert sorted(faces["image_id"]) == ids, name
        assert faces.loc[faces["ok"], "outside_fraction"].between(0, 1).all(), name
        forged = pd.read_parquet(results / name / "forgeries" / "faceswap.parquet")
        assert sorted(forged["image_id"]) == ids, name
        assert forged["ok"].any(), name
        rate = pd.read_csv(results / name / "face_detection_rate.csv")
        # Faces found in every group (UTKFace's unparsed name has none), with the share of
        # the crops outside the photos that the report gives per group.
        named = rate[rate["group"].fillna("") != ""]
        assert "(all)" in set(named["group"]) and (named["rate"] > 0).all(), name
        assert named["outside_fraction"].between(0, 1).all(), name

    table = pd.read_csv(results / "fairness_table.csv")
    assert {"dataset", "metric", "meso4"} <= set(table.columns)
    assert set(table["dataset"]) == {"mine", "theirs", *on_disk, "video"}
    assert table.groupby("dataset")["metric"].apply(lambda m: "DPD" in set(m)).all()
    faces_mine = pd.read_parquet(results / "mine" / "faces.parquet")
    ids = dict(zip(rows["path"], rows["image_id"]))
    bad = [rel for rel, reason in EXPECTED.values() if reason is not None]
    source_reasons = dict(zip(faces_mine["image_id"], faces_mine["reason"]))
    for rel in bad:
        assert source_reasons[ids[rel]] == f"source not ok ({reasons[rel]})"
    assert image_id_from_path("UTKFace/1_0_0_2.jpg.chip.jpg") == "UTKFace__1_0_0_2"
    # The hostile files are the recorded failures of their groups.
    failures = pd.read_csv(results / "failures_per_group.csv")
    at_sources = failures[(failures["dataset"] == "mine") & (failures["stage"] == "sources")]
    assert at_sources["n_failed"].sum() == len(bad)
    recorded = " ".join(at_sources["reasons"].astype(str))
    for rel in bad:
        assert reasons[rel].split(" (")[0] in recorded


def test_every_adapter_runs_to_the_fairness_table_and_keeps_every_file(repo_root, tmp_path):
    trees, tables = write_trees(tmp_path)
    workdir = workdir_with(tmp_path, "run", all_adapters_config(repo_root, trees))
    snakemake(
        repo_root,
        workdir,
        "--cores",
        "2",
        "results/fairness_table.csv",
        "results/failures_per_group.csv",
    )
    check_run(workdir / "results", trees, tables)
