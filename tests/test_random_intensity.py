"""The Benchmark protocol: each sample at a random intensity, AUC per perturbation type."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairforge.perturb import (
    RANDOM_SUITE,
    PerturbationError,
    apply_variant,
    create_op,
    is_random_variant,
    op_for_variant,
    parse_variant,
    suite,
)
from fairforge.seeding import rng_for
from fairforge.tables import random_intensity_table, robustness_table
from fairforge.tables.variants import RANDOM_CATEGORY, describe_variant, sorted_variants


def _image() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (24, 24, 3), dtype=np.uint8)


def test_each_sample_gets_one_level_drawn_from_its_id():
    image = _image()
    assert parse_variant("gaussian_blur@random") == ("gaussian_blur", "random")
    assert is_random_variant("jpeg@random") and not is_random_variant("jpeg@30")
    op = op_for_variant("gaussian_blur@random")
    levels = []
    for k in range(12):
        sid = f"s{k}"
        out = apply_variant(image, "gaussian_blur@random", sid)
        assert np.array_equal(out, apply_variant(image, "gaussian_blur@random", sid))
        # the same as the drawn level applied alone (the blur itself draws nothing)
        op(image, rng_for(sid, "gaussian_blur@random"))
        levels.append(op.last_level)
        assert np.array_equal(out, create_op("gaussian_blur", op.last_level)(image, None))
    assert set(levels) <= {3, 5, 7, 9, 11} and len(set(levels)) >= 3


def test_random_suite_and_refusals():
    assert "jpeg@random" in RANDOM_SUITE and "df_block@random" in RANDOM_SUITE
    assert suite("random")[0] == "clean"
    assert suite("random~frame")[1].endswith("@random~frame")
    with pytest.raises(PerturbationError):
        op_for_variant("vid_h264@random")


def test_tables_give_auc_per_type_and_the_mean_over_training_datasets():
    info = describe_variant("jpeg@random")
    assert info["operation"] == "jpeg" and info["category"] == RANDOM_CATEGORY
    assert np.isnan(info["severity"])
    assert sorted_variants(["jpeg@random", "jpeg@30", "clean", "jpeg@95"]) == [
        "clean",
        "jpeg@95",
        "jpeg@30",
        "jpeg@random",
    ]
    rows = []
    for detector, offset in (("m_a", 0.0), ("m_b", 0.1)):
        for variant, auc in (("clean", 0.9), ("jpeg@30", 0.6), ("jpeg@random", 0.7)):
            rows.append(
                {"dataset": "d", "detector": detector, "variant": variant, "AUC": auc - offset}
            )
    robustness = robustness_table(pd.DataFrame(rows))
    overall = robustness[robustness["scope"] == "overall"].set_index("detector")["AUC"]
    assert overall["m_a"] == pytest.approx(0.6)  # op@random stays out of the overall score
    detectors = {
        "m_a": {"arch": "meso4", "train_dataset": "d1"},
        "m_b": {"arch": "meso4", "train_dataset": "d2"},
    }
    table = random_intensity_table(robustness, detectors).set_index("train_dataset")
    assert table.loc["d1", "AUC"] == pytest.approx(0.7)
    assert table.loc["d2", "clean_AUC"] == pytest.approx(0.8)
    assert table.loc["(mean)", "AUC"] == pytest.approx(0.65)
    assert table.loc["(mean)", "n_train_datasets"] == 2
    assert table.loc["(mean)", "operation"] == "jpeg"
