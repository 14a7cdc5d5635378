import pandas as pd
import pytest

from fairforge.samples import build_samples, failure_counts, method_samples, share_of


def _tables():
    sources = pd.DataFrame(
        {
            "image_id": ["a1", "a2", "b1", "b2"],
            "subject_id": ["a", "a", "b", "b"],
            "group": ["g1", "g1", "g2", "g2"],
            "split": ["train", "train", "test", "test"],
            "ok": [True, True, True, False],
            "reason": ["", "", "", "unreadable image"],
        }
    )
    faces = pd.DataFrame(
        {
            "image_id": ["a1", "a2", "b1", "b2"],
            "ok": [True, False, True, False],
            "reason": ["", "no face detected", "", "source not ok (unreadable image)"],
            "crop_path": ["c/a1.png", None, "c/b1.png", None],
        }
    )
    fakes = pd.DataFrame(
        {
            "sample_id": ["faceswap__a1", "faceswap__b1"],
            "method": "faceswap",
            "backend": "classical",
            "image_id": ["a1", "b1"],
            "target_image_id": ["b1", "a1"],
            "path": ["f/a1.png", None],
            "mask_path": ["f/a1_mask.png", None],
            "group": ["g1", "g2"],
            "subject_id": ["a", "b"],
            "split": ["train", "test"],
            "ok": [True, False],
            "reason": ["", "degenerate triangles"],
        }
    )
    return sources, faces, fakes


def test_samples_hold_ok_reals_and_ok_fakes_with_labels():
    sources, faces, fakes = _tables()
    samples = build_samples("d", sources, faces, [fakes])
    assert list(samples["sample_id"]) == ["faceswap__a1", "real__a1", "real__b1"]
    assert samples.set_index("sample_id")["label"].to_dict() == {
        "faceswap__a1": 1,
        "real__a1": 0,
        "real__b1": 0,
    }
    real = samples.set_index("sample_id").loc["real__b1"]
    assert (real["path"], real["group"], real["split"], real["method"]) == (
        "c/b1.png",
        "g2",
        "test",
        "real",
    )


def test_failures_are_counted_per_stage_and_group():
    sources, faces, fakes = _tables()
    table = failure_counts(sources, faces, [fakes]).set_index(["stage", "group"])
    assert table.loc[("faces", "g1"), "n_failed"] == 1
    assert table.loc[("faces", "g2"), "failure_rate"] == 0.5
    assert table.loc[("sources", "g2"), "reasons"] == "unreadable image (1)"
    assert table.loc[("forgery:faceswap", "g2"), "n_failed"] == 1


def test_method_samples_split_the_samples_manifest():
    sources, faces, fakes = _tables()
    other = fakes.assign(
        sample_id=["simswap__a1", "simswap__b1"], method="simswap", ok=[True, True]
    )
    whole = build_samples("d", sources, faces, [fakes, other])
    parts = [
        method_samples("d", "crops", sources, faces),
        method_samples("d", "faceswap", sources, faces, fakes),
        method_samples("d", "simswap", sources, faces, other),
    ]
    assert [sorted(p["method"].unique()) for p in parts] == [["real"], ["faceswap"], ["simswap"]]
    joined = pd.concat(parts, ignore_index=True).sort_values("sample_id", ignore_index=True)
    pd.testing.assert_frame_equal(joined, whole)


def test_method_samples_need_a_forgery_for_fakes_only():
    sources, faces, fakes = _tables()
    with pytest.raises(ValueError, match="forgery manifest"):
        method_samples("d", "faceswap", sources, faces)
    with pytest.raises(ValueError, match="forgery manifest"):
        method_samples("d", "crops", sources, faces, fakes)


def test_the_crops_share_keeps_a_labelled_datasets_own_fakes():
    sources, faces, fakes = _tables()
    sources = sources.assign(label=[0, 0, 1, 1], method=["real", "real", "deepfakes", "x"])
    whole = build_samples("d", sources, faces, [fakes])
    crops = method_samples("d", "crops", sources, faces)
    assert set(crops["method"]) == {"real", "deepfakes"} and crops["label"].sum() == 1
    generated = method_samples("d", "faceswap", sources, faces, fakes)
    joined = pd.concat([crops, generated], ignore_index=True).sort_values(
        "sample_id", ignore_index=True
    )
    pd.testing.assert_frame_equal(joined, whole)


def test_a_share_is_found_again_in_the_whole_manifest():
    sources, faces, fakes = _tables()
    whole = build_samples("d", sources, faces, [fakes])
    for method, forgery in (("crops", None), ("faceswap", fakes)):
        share = method_samples("d", method, sources, faces, forgery)
        pd.testing.assert_frame_equal(share_of(whole, method), share)
