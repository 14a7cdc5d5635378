import json
from pathlib import Path

import pandas as pd
import pytest

from fairforge.config import ConfigError, validate_config
from fairforge.faces.attributes import faces_with_attributes
from fairforge.paths import OUTPUTS, RESULTS, log_path, report_paths, result_path
from fairforge.registry import UnknownName
from fairforge.sharding import read_shard, shard_ids, shard_slice
from fairforge.sources import ADAPTERS
from fairforge.workflow import (
    count_source_items,
    dataset_root,
    detector_settings,
    method_samples_inputs,
    predict_shard_samples,
    prediction_methods,
    train_dataset,
    train_input,
)


def test_shards_cover_every_row_once():
    frame = pd.DataFrame({"image_id": [f"i{k:03d}" for k in range(23)]})
    ids = shard_ids(len(frame), 5)
    assert ids == ["000", "001", "002", "003", "004"]
    parts = [shard_slice(frame, s, 5) for s in ids]
    assert sum(len(p) for p in parts) == 23
    assert pd.concat(parts)["image_id"].is_unique
    assert shard_ids(0, 5) == ["000"]


def test_source_counts_without_decoding(tmp_path):
    assert (
        count_source_items(
            "s",
            {"adapter": "synthetic", "options": {"subjects_per_group": 2, "images_per_subject": 3}},
        )
        == 4 * 2 * 2 * 3
    )
    table = tmp_path / "faces.csv"
    table.write_text("path,subject_id,group\n" + "".join(f"x{i}.jpg,s{i},g\n" for i in range(7)))
    assert count_source_items("c", {"adapter": "csv", "root": str(table)}) == 7
    (tmp_path / "rfw" / "African" / "m1").mkdir(parents=True)
    for i in range(3):
        (tmp_path / "rfw" / "African" / "m1" / f"{i}.jpg").write_bytes(b"x")
    assert count_source_items("r", {"adapter": "rfw", "root": str(tmp_path / "rfw")}) == 3
    with pytest.raises(FileNotFoundError, match="datasets.r.root"):
        count_source_items("r", {"adapter": "rfw", "root": str(tmp_path / "absent")})


def test_csv_dataset_in_both_documented_forms(tmp_path):
    folder = tmp_path / "my_faces"
    folder.mkdir()
    (folder / "labels.csv").write_text(
        "path,subject_id,group\n" + "".join(f"x{i}.jpg,s{i},g\n" for i in range(5))
    )
    as_file = {"adapter": "csv", "root": str(folder / "labels.csv")}
    as_folder = {"adapter": "csv", "root": str(folder), "options": {"table": "labels.csv"}}
    for cfg in (as_file, as_folder):
        assert count_source_items("mine", cfg) == 5
        # Paths in the csv are relative to its folder; every stage reads them from there.
        assert dataset_root("mine", cfg) == folder
        assert ADAPTERS.create("csv").listing_options("mine", cfg) == {"table": "labels.csv"}
    with pytest.raises(FileNotFoundError, match="options.table"):
        count_source_items("mine", {"adapter": "csv", "root": str(folder)})
    with pytest.raises(FileNotFoundError, match="other.csv"):
        count_source_items("mine", {**as_folder, "options": {"table": "other.csv"}})
    with pytest.raises(ValueError, match="folder root"):
        count_source_items("mine", {**as_file, "options": {"table": "labels.csv"}})


def test_every_adapter_answers_the_workflow_without_decoding(tmp_path):
    (tmp_path / "ff").mkdir()
    (tmp_path / "ff" / "fairface_label_val.csv").write_text(
        "file,age,gender,race\n" + "".join(f"val/{i}.jpg,3-9,Male,White\n" for i in range(4))
    )
    # The config documents one label file as a plain string.
    fairface = {
        "adapter": "fairface",
        "root": str(tmp_path / "ff"),
        "options": {"labels": "fairface_label_val.csv"},
    }
    assert count_source_items("ff", fairface) == 4
    assert count_source_items("ff", {"adapter": "fairface", "root": str(tmp_path / "ff")}) == 4
    (tmp_path / "vids" / "labels.csv").parent.mkdir()
    (tmp_path / "vids" / "labels.csv").write_text("path,subject_id,group\na.mp4,s1,g\nb.mp4,s2,g\n")
    video = {"adapter": "video", "root": str(tmp_path / "vids"), "options": {"frames_per_video": 3}}
    assert count_source_items("v", video) == 2 * 3
    assert dataset_root("v", video) == Path(RESULTS) / "v" / "video_source"
    assert ADAPTERS.create("video").listing_options("v", video)["videos"] == str(tmp_path / "vids")
    assert dataset_root("s", {"adapter": "synthetic"}) == Path(RESULTS) / "s" / "source_images"
    assert count_source_items("s", {"adapter": "synthetic"}) == 4 * 2 * 8 * 10
    assert (
        count_source_items(
            "sv",
            {
                "adapter": "synthetic_video",
                "options": {"subjects_per_group": 1, "clips_per_subject": 1, "frames_per_video": 4},
            },
        )
        == 8 * 4
    )
    with pytest.raises(UnknownName, match="valid: .*csv"):
        count_source_items("x", {"adapter": "celeba", "root": str(tmp_path)})
    with pytest.raises(ValueError, match="'root' is required"):
        dataset_root("r", {"adapter": "rfw"})


def test_detector_settings_override_the_shared_protocol():
    config = validate_config(
        {
            "training": {"epochs": 4, "weight_decay": 5e-4},
            "detectors": {
                "a": {"arch": "meso4", "epochs": 9, "balanced": True, "weight_decay": 0.0},
                "b": {},
            },
        }
    )
    a, b = detector_settings(config, "a"), detector_settings(config, "b")
    assert (a["arch"], a["epochs"], a["balanced"], a["lr"]) == ("meso4", 9, True, 2e-4)
    assert (b["arch"], b["epochs"], b["batch_size"]) == ("b", 4, 32)
    assert (a["weight_decay"], b["weight_decay"]) == (0.0, 5e-4)
    assert train_dataset(config, "a") == "synthetic"


def test_faces_get_attributes_as_columns():
    sources = pd.DataFrame(
        {
            "image_id": ["x", "y"],
            "subject_id": ["s", "t"],
            "group": ["tone1", "tone2"],
            "split": ["train", "test"],
            "attributes": [
                json.dumps({"tone": "tone1", "gender": "male"}),
                json.dumps({"tone": "tone2", "gender": "female"}),
            ],
        }
    )
    faces = pd.DataFrame({"image_id": ["y", "x"], "ok": [True, False]})
    out = faces_with_attributes(sources, faces)
    assert list(out["image_id"]) == ["y", "x"]
    assert list(out["gender"]) == ["female", "male"]
    assert list(out["split"]) == ["test", "train"]


def test_a_shard_is_read_alone_and_equals_the_slice(tmp_path):
    from fairforge.manifest import write_manifest

    frame = pd.DataFrame({"image_id": [f"i{k:03d}" for k in range(23)], "v": range(23)})
    write_manifest(frame, tmp_path / "m.parquet", row_group_size=5)
    for shard in shard_ids(len(frame), 5):
        pd.testing.assert_frame_equal(
            read_shard(tmp_path / "m.parquet", shard, 5),
            shard_slice(frame, shard, 5).reset_index(drop=True),
        )
    # a file written with other row groups still gives the right rows
    write_manifest(frame, tmp_path / "n.parquet", row_group_size=7)
    pd.testing.assert_frame_equal(
        read_shard(tmp_path / "n.parquet", "002", 5), frame.iloc[10:15].reset_index(drop=True)
    )


def test_result_paths_fill_the_wildcards_given_and_keep_the_others():
    assert result_path("forgery", dataset="d") == "results/d/forgeries/{method}.parquet"
    assert result_path("forgery", "out", dataset="d", method="m") == "out/d/forgeries/m.parquet"
    assert log_path("train/{detector}.log") == "results/logs/train/{detector}.log"
    with pytest.raises(KeyError):
        result_path("no_such_output")


def test_every_file_the_report_reads_is_an_output_of_the_path_table(tmp_path):
    """The report's inputs come from the one path table: each is a filled-in template."""
    for ranking in (True, False):
        paths = report_paths(str(tmp_path), ["a", "b"], ["m", "n"], ranking=ranking)
        assert ("exposure_table" in paths) == ranking
        filled = {
            result_path(name, str(tmp_path), dataset=d, method=m)
            for name in OUTPUTS
            for d in ("a", "b")
            for m in ("m", "n")
        }
        for key, value in paths.items():
            for path in value if isinstance(value, list) else [value]:
                assert path in filled, (key, path)


def test_scripts_take_the_results_root_from_their_rule(repo_root):
    for script in (repo_root / "scripts").glob("*.py"):
        text = script.read_text()
        assert '"results"' not in text and "RESULTS" not in text, script.name
        assert len(text.splitlines()) < 25, script.name
        # The glue is for planning; a job imports only what its own work needs.
        assert "fairforge.workflow" not in text, script.name


def test_training_and_prediction_read_their_own_methods_only():
    config = validate_config(
        {
            "forgery": {"methods": ["faceswap", "simswap", "sbi"]},
            "variants": ["clean", "vid_h264@40"],
            "detectors": {
                "a": {"arch": "meso4", "train_methods": ["simswap"]},
                "b": {"arch": "meso4", "checkpoint": "/w/b.pt"},
            },
        }
    )
    assert train_input(config, "a") == {
        "weights": [],
        "samples": [
            "results/synthetic/samples/crops.parquet",
            "results/synthetic/samples/simswap.parquet",
        ],
    }
    assert train_input(config, "b") == {"weights": ["/w/b.pt"], "samples": []}
    assert prediction_methods(config, "synthetic") == ["crops", "faceswap", "simswap", "sbi"]
    config["datasets"]["synthetic"]["forgery"] = ["sbi"]
    assert prediction_methods(config, "synthetic") == ["crops", "sbi"]
    assert train_input(config, "a")["samples"] == ["results/synthetic/samples/crops.parquet"]
    assert method_samples_inputs("synthetic", "crops") == {
        "sources": "results/synthetic/sources.parquet",
        "faces": "results/synthetic/faces.parquet",
    }
    assert method_samples_inputs("synthetic", "sbi")["forgery"] == (
        "results/synthetic/forgeries/sbi.parquet"
    )
    assert predict_shard_samples("synthetic", "clean", "sbi") == (
        "results/synthetic/samples/sbi.parquet"
    )
    # a video variant's decoded crops hold every method; the job keeps its own
    assert predict_shard_samples("synthetic", "vid_h264@40", "sbi") == (
        "results/synthetic/video_variants/vid_h264@40/samples.parquet"
    )


def test_a_detector_trains_on_one_dataset_or_several_and_is_tested_on_all():
    config = validate_config(
        {
            "datasets": {
                "a": {"adapter": "synthetic"},
                "b": {"adapter": "synthetic", "train_compression": "jpeg@60", "forgery": []},
                "c": {"adapter": "synthetic", "split": "test_only"},
            },
            "forgery": {"methods": ["faceswap"]},
            "detectors": {"one": {"train_dataset": "b"}, "both": {"train_dataset": ["a", "b"]}},
        }
    )
    assert train_input(config, "one")["samples"] == ["results/b/train_copies/crops.parquet"]
    # pooled: each dataset's crops (b's as its compressed copies) and its own generated fakes
    assert train_input(config, "both")["samples"] == [
        "results/a/samples/crops.parquet",
        "results/a/samples/faceswap.parquet",
        "results/b/train_copies/crops.parquet",
    ]
    assert (train_dataset(config, "one"), train_dataset(config, "both")) == ("b", "a+b")
    for bad, match in ((["a", "nope"], "unknown dataset 'nope'"), ("c", "'c' is test_only")):
        config_in = {
            "datasets": {"a": {"adapter": "synthetic"}, "c": {"adapter": "synthetic"}},
            "detectors": {"m": {"train_dataset": bad}},
        }
        config_in["datasets"]["c"]["split"] = "test_only"
        with pytest.raises(ConfigError, match=match):
            validate_config(config_in)
