"""The Benchmark protocol: each sample at a random intensity, AUC per perturbation type."""

from __future__ import annotations

import cv2
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
    random_draws,
    suite,
)
from fairforge.seeding import rng_for
from fairforge.tables import (
    random_draw_summary,
    random_intensity_draws,
    random_intensity_table,
    robustness_table,
)
from fairforge.tables.robustness import SPREAD
from fairforge.tables.variants import RANDOM_CATEGORY, describe_variant, sorted_variants


def _image() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (24, 24, 3), dtype=np.uint8)


LEVELS = {"random": {"draw": "levels"}}


def test_draw_levels_gives_each_sample_one_tabulated_level_from_its_id():
    image = _image()
    assert parse_variant("gaussian_blur@random") == ("gaussian_blur", "random")
    assert is_random_variant("jpeg@random") and not is_random_variant("jpeg@30")
    op = op_for_variant("gaussian_blur@random", LEVELS)
    levels = []
    for k in range(12):
        sid = f"s{k}"
        out = apply_variant(image, "gaussian_blur@random", sid, LEVELS)
        assert np.array_equal(out, apply_variant(image, "gaussian_blur@random", sid, LEVELS))
        # the same as the drawn level applied alone (the blur itself draws nothing)
        op(image, rng_for(sid, "gaussian_blur@random"))
        levels.append(op.last_level)
        assert np.array_equal(out, create_op("gaussian_blur", op.last_level)(image, None))
    assert set(levels) <= {3, 5, 7, 9, 11} and len(set(levels)) >= 3


IDS = [f"s{k}" for k in range(400)]


@pytest.mark.parametrize(
    ("name", "low", "high"),
    [("gaussian_noise", 5.0, 50.0), ("resize", 0.15, 0.75), ("df_noise", 0.001, 0.05)],
)
def test_continuous_draws_fill_the_range_between_mildest_and_harshest(name, low, high):
    params = np.array([p for _, p in random_draws(IDS, f"{name}@random")])
    assert params.min() >= low and params.max() <= high
    # uniform on the range: every tenth of it is hit, and the values are not the levels
    tenths = np.floor((params - low) / (high - low) * 10).clip(0, 9)
    assert set(tenths.astype(int)) == set(range(10))
    assert len(set(params.tolist())) == len(IDS)
    assert abs(params.mean() - (low + high) / 2) < 0.06 * (high - low)


def test_integer_and_kernel_parameters_are_rounded():
    quality = [p for _, p in random_draws(IDS, "jpeg@random")]
    assert all(isinstance(q, int) for q in quality)
    assert 30 <= min(quality) < 35 and 90 < max(quality) <= 95 and len(set(quality)) > 55
    kernels = {p for _, p in random_draws(IDS, "df_blur@random")}
    assert kernels == set(range(7, 22, 2))  # odd sizes between 7 and 21, not just the levels
    blocks = {p for _, p in random_draws(IDS, "df_block@random")}
    assert blocks <= set(range(16, 81)) and len(blocks) > 40
    parts = [p for _, p in random_draws(IDS, "blur+jpeg@random")]
    assert all(k % 2 == 1 and 3 <= k <= 11 and 30 <= q <= 95 for k, q in parts)
    # one fraction for both parts: a stronger blur comes with a lower quality
    assert np.corrcoef(np.array(parts).T)[0, 1] < -0.9


def test_a_sample_gets_the_same_draw_every_time_and_applies_it():
    image = _image()
    first = random_draws(IDS[:20], "gaussian_blur@random")
    assert first == random_draws(IDS[:20], "gaussian_blur@random")
    assert first != random_draws(IDS[:20], "gaussian_blur@random~frame")  # seeded by variant
    op = op_for_variant("gaussian_blur@random")
    for sid, (level, kernel) in zip(IDS[:20], first):
        out = apply_variant(image, "gaussian_blur@random", sid)
        assert np.array_equal(out, apply_variant(image, "gaussian_blur@random", sid))
        op(image, rng_for(sid, "gaussian_blur@random"))
        assert op.last_param == kernel and level is None
        assert np.array_equal(out, cv2.GaussianBlur(image, (kernel, kernel), 0))


def test_operations_without_a_range_draw_a_level():
    assert {p for _, p in random_draws(IDS[:50], "grayscale@random")} == {1}
    assert {lv for lv, _ in random_draws(IDS[:50], "far@random")} <= {1, 2, 3, 4, 5}
    with pytest.raises(PerturbationError, match="draw"):
        op_for_variant("jpeg@random", {"random": {"draw": "sometimes"}})


def test_the_draws_are_listed_and_summarised():
    draws = random_intensity_draws(IDS[:100], ["jpeg@random", "poisson_gaussian_noise@random"])
    assert list(draws["sample_id"][:3]) == IDS[:3]
    summary = random_draw_summary(draws, "d").set_index("operation")
    assert summary.loc["jpeg", "param_mildest"] == "95"
    assert summary.loc["jpeg", "n_drawn"] == 100
    assert 30 <= int(summary.loc["jpeg", "drawn_min"]) < int(summary.loc["jpeg", "drawn_max"])
    assert summary.loc["poisson_gaussian_noise", "param_harshest"] == "(0.09, 0.09)"


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
    summary = random_draw_summary(random_intensity_draws(IDS[:30], ["jpeg@random"]), "d")
    with_draws = random_intensity_table(robustness, detectors, draws=summary)
    drawn = with_draws.loc[with_draws["operation"] != SPREAD]  # the std rows have no draws
    assert (drawn["n_drawn"] == 30).all() and (drawn["param_harshest"] == "30").all()
    table = random_intensity_table(robustness, detectors)
    table = table.loc[table["operation"] != SPREAD].set_index("train_dataset")
    assert table.loc["d1", "AUC"] == pytest.approx(0.7)
    assert table.loc["d2", "clean_AUC"] == pytest.approx(0.8)
    assert table.loc["(mean)", "AUC"] == pytest.approx(0.65)
    assert table.loc["(mean)", "n_training_sets"] == 2
    assert table.loc["(mean)", "operation"] == "jpeg"
