import pandas as pd
import pytest

from fairforge.faces.attributes import faces_with_attributes
from fairforge.forgery.shard import read_forgery_shard
from fairforge.manifest import (
    ManifestError,
    columns_in,
    read_ids,
    read_manifest,
    read_rows,
    write_manifest,
)
from shard_manifests import EIGHT_IDS, eight_sources


@pytest.fixture
def manifest(tmp_path):
    """Ten rows over four row groups, with a list column like the faces' landmarks."""
    frame = pd.DataFrame(
        {
            "image_id": [f"i{k:02d}" for k in range(10)],
            "ok": [k % 3 != 0 for k in range(10)],
            "score": [k / 10 for k in range(10)],
            "landmarks": [[float(k), k + 0.5] for k in range(10)],
        }
    )
    path = tmp_path / "m.parquet"
    write_manifest(frame, path, row_group_size=3)
    return path


def test_ids_come_back_in_file_order_like_a_filtered_whole_read(manifest):
    whole = read_manifest(manifest)
    got = read_ids(manifest, ["i07", "i01", "i04", "i01"])
    expected = whole[whole["image_id"].isin(["i01", "i04", "i07"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, expected)


def test_absent_ids_are_skipped_and_no_ids_give_an_empty_frame(manifest):
    assert list(read_ids(manifest, ["i03", "nope"])["image_id"]) == ["i03"]
    empty = read_ids(manifest, [], columns=["image_id", "score"])
    assert empty.empty and list(empty.columns) == ["image_id", "score"]
    assert empty.dtypes.equals(read_manifest(manifest, columns=["image_id", "score"]).dtypes)
    assert read_ids(manifest, ["nope"]).empty


def test_only_the_asked_columns_are_returned(manifest):
    got = read_ids(manifest, ["i02", "i05"], columns=["score", "ok"])
    assert list(got.columns) == ["score", "ok"]
    assert got["score"].tolist() == [0.2, 0.5]
    by_score = read_ids(manifest, [0.5], columns=["image_id"], id_column="score")
    assert by_score["image_id"].tolist() == ["i05"]


def test_contract_is_checked_from_the_schema(manifest, tmp_path):
    with pytest.raises(ManifestError, match="faces contract"):
        read_ids(manifest, ["i01"], contract="faces")
    with pytest.raises(ManifestError, match="faces contract"):
        read_manifest(manifest, "faces", columns=["image_id"])
    with pytest.raises(ManifestError, match="not found"):
        read_ids(tmp_path / "absent.parquet", ["i01"])


def test_optional_columns_and_rows_of_some_columns(manifest):
    assert columns_in(manifest, ["video_id", "score", "image_id"]) == ["score", "image_id"]
    rows = read_rows(manifest, 2, 5, columns=["image_id"])
    assert list(rows.columns) == ["image_id"]
    assert rows["image_id"].tolist() == ["i02", "i03", "i04"]
    assert list(read_rows(manifest, 20, 25, columns=["ok"]).columns) == ["ok"]


def test_a_forgery_shard_reads_its_sources_and_their_targets_only(tmp_path):
    ids = list(EIGHT_IDS)
    sources = eight_sources()
    faces = pd.DataFrame(
        {
            "image_id": ids,
            "ok": [k != 1 for k in range(8)],
            "reason": ["" if k != 1 else "no face" for k in range(8)],
            "crop_path": [f"c/{i}.png" for i in ids],
            "landmarks": [[0.0, 1.0]] * 8,
            "bbox": [[0, 0, 4, 4]] * 8,
            "det_score": 0.9,
            "detector": "hog",
        }
    )
    pairs = pd.DataFrame(
        {
            "image_id": ["i00", "i02", "i03", "i04", "i05"],
            "target_image_id": ["i06", "i07", "i07", "i00", None],
            "source_subject": ["s0", "s1", "s1", "s2", "s2"],
            "target_subject": ["s3", "s3", "s3", "s0", None],
            "group": ["g"] * 5,
            "split": ["train"] * 5,
            "ok": [True, True, True, True, False],
            "reason": ["", "", "", "", "no target"],
        }
    )
    write_manifest(sources, tmp_path / "sources.parquet", row_group_size=4)
    write_manifest(faces, tmp_path / "faces.parquet")
    write_manifest(pairs, tmp_path / "pairs.parquet")
    shard_ids, shard_pairs, shard_faces = read_forgery_shard(
        tmp_path / "sources.parquet",
        tmp_path / "faces.parquet",
        tmp_path / "pairs.parquet",
        "000",
        4,
    )
    assert shard_ids == ["i00", "i01", "i02", "i03"]
    assert shard_pairs["image_id"].tolist() == ["i00", "i02", "i03"]
    assert shard_faces["image_id"].tolist() == ["i00", "i01", "i02", "i03", "i06", "i07"]
    whole = faces_with_attributes(sources, faces)
    expected = whole.loc[whole["image_id"].isin(shard_faces["image_id"]), shard_faces.columns]
    pd.testing.assert_frame_equal(shard_faces, expected.reset_index(drop=True))
