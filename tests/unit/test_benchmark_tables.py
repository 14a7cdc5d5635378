"""The Benchmark paper's tables and figures: the robustness std over the perturbation types
(§4.3), detection on each detector's own training set (Table 4) and the average AUC against
cost (Figs. 4-6), on small hand-computed examples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairforge.report.figures import efficiency_figure, random_intensity_figure
from fairforge.tables import in_domain_table, random_intensity_table, robustness_table
from fairforge.tables.detectors import training_set
from fairforge.tables.efficiency import AVERAGED, family_efficiency
from fairforge.tables.robustness import (
    MEAN_ALL,
    MEAN_COMMON,
    SPREAD,
    perturbation_spread,
    population_std,
)
from fairforge.tables.variants import RANDOM_CATEGORY

PERTURBED = [
    "df_contrast@random",
    "df_saturation@random",
    "df_blur@random",
    "jpeg@random",
    "df_noise@random",
]


def test_population_std_divides_by_n():
    # mean 0.6, squared deviations 0.04, 0.01, 0, 0.01, 0.04: variance 0.1 / 5 = 0.02
    assert population_std([0.8, 0.7, 0.6, 0.5, 0.4]) == pytest.approx(np.sqrt(0.02))
    assert population_std([0.8, 0.7, 0.6, 0.5, 0.4]) < np.std([0.8, 0.7, 0.6, 0.5, 0.4], ddof=1)
    assert population_std([0.7, np.nan, 0.7]) == 0.0
    assert np.isnan(population_std([np.nan]))


def _robustness(aucs: dict[str, list[float]]) -> pd.DataFrame:
    rows = [
        {"dataset": "t", "detector": detector, "variant": variant, "AUC": auc}
        for detector, values in aucs.items()
        for variant, auc in zip(["clean", *PERTURBED], values)
    ]
    return robustness_table(pd.DataFrame(rows))


def test_the_robustness_std_of_each_detector_and_of_the_averages():
    robustness = _robustness(
        {
            "m_a": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
            "m_b": [0.9, 0.9, 0.9, 0.9, 0.9, 0.7],
            "m_df": [0.8, 0.6, 0.6, 0.6, 0.6, 0.6],
        }
    )
    detectors = {
        "m_a": {"arch": "meso4", "train_dataset": "d1"},
        "m_b": {"arch": "meso4", "train_dataset": "dfdc"},
        # one manipulation of d1: a training set of its own, averaged with the others
        "m_df": {"arch": "meso4", "train_dataset": "d1", "train_methods": ["Deepfakes"]},
    }
    table = random_intensity_table(robustness, detectors, average_excludes=["dfdc"])
    std = table.loc[table["operation"] == SPREAD].set_index("train_dataset")
    # m_a: 0.8 ... 0.4, population std sqrt(0.02); m_b: four 0.9 and 0.7: mean 0.86,
    # deviations 0.04 (x4) and -0.16: variance (4 * 0.0016 + 0.0256) / 5 = 0.0064
    by_detector = table.loc[table["operation"] == SPREAD].set_index("detector")
    assert by_detector.loc["m_a", "AUC"] == pytest.approx(np.sqrt(0.02))
    assert by_detector.loc["m_b", "AUC"] == pytest.approx(0.08)
    assert by_detector.loc["m_df", "AUC"] == pytest.approx(0.0)
    assert (table.loc[table["operation"] == SPREAD, "n_operations"] == 5).all()
    # the averages first (over m_a, m_b, m_df: 0.7, 0.7667, 0.7, 0.7333, 0.5667), then std
    means = table.loc[(table["train_dataset"] == MEAN_ALL) & (table["operation"] != SPREAD)]
    assert means["n_training_sets"].eq(3).all()
    expected = np.array([[0.8, 0.7, 0.6, 0.5, 0.4], [0.9] * 4 + [0.7], [0.6] * 5]).mean(0)
    assert sorted(means["AUC"]) == pytest.approx(sorted(expected))
    assert std.loc[MEAN_ALL, "AUC"] == pytest.approx(np.std(expected, ddof=0))
    # commonly trained: dfdc left out, m_a and m_df: 0.7, 0.65, 0.6, 0.55, 0.5 -> sqrt(0.005)
    assert std.loc[MEAN_COMMON, "AUC"] == pytest.approx(np.sqrt(0.005))
    assert std.loc[MEAN_COMMON, "n_training_sets"] == 2
    # no second average without average_excludes; the spread rows follow their own rows
    plain = random_intensity_table(robustness, detectors)
    assert MEAN_COMMON not in set(plain["train_dataset"])
    assert (
        plain.groupby(["detector", "train_dataset"], sort=False)["operation"]
        .last()
        .eq(SPREAD)
        .all()
    )
    assert perturbation_spread(plain.loc[plain["operation"] != SPREAD]).shape[0] == 4


def test_the_robustness_table_carries_each_detectors_std_beside_its_mean():
    robustness = _robustness(
        {"m_a": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4], "m_b": [0.9, 0.9, 0.9, 0.9, 0.9, 0.7]}
    )
    spread = robustness.loc[robustness["scope"] == "spread"].set_index("detector")
    assert set(spread["category"]) == {RANDOM_CATEGORY}
    assert spread.loc["m_a", "AUC"] == pytest.approx(np.sqrt(0.02))
    assert spread.loc["m_b", "AUC"] == pytest.approx(0.08)
    assert (spread["n_variants"] == 5).all() and spread["drop"].isna().all()
    # the same number as the random-intensity table's
    table = random_intensity_table(robustness, {"m_a": {"arch": "meso4", "train_dataset": "d"}})
    by_detector = table.loc[table["operation"] == SPREAD].set_index("detector")
    assert by_detector.loc["m_a", "AUC"] == pytest.approx(spread.loc["m_a", "AUC"])
    # a table without op@random variants has no spread row
    clean_and_jpeg = pd.DataFrame(
        {"dataset": "t", "detector": "m", "variant": ["clean", "jpeg@30"], "AUC": [0.9, 0.7]}
    )
    assert "spread" not in set(robustness_table(clean_and_jpeg)["scope"])


def test_the_random_intensity_figure_draws_the_averages(tmp_path):
    robustness = _robustness({"m_a": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4], "m_b": [0.9] * 6})
    detectors = {
        "m_a": {"arch": "meso4", "train_dataset": "d1"},
        "m_b": {"arch": "meso4", "train_dataset": "d2"},
    }
    table = random_intensity_table(robustness, detectors, average_excludes=["d2"])
    path = random_intensity_figure(table, tmp_path / "fig.png")
    assert path.stat().st_size > 1000
    again = random_intensity_figure(table, tmp_path / "again.png")
    assert again.read_bytes() == path.read_bytes()


def _predictions() -> pd.DataFrame:
    rows = []

    def add(detector, dataset, method, label, scores):
        for k, score in enumerate(scores):
            rows.append(
                {
                    "sample_id": f"{dataset}/{method}/{k}",
                    "dataset": dataset,
                    "split": "test",
                    "label": label,
                    "method": method,
                    "group": "g",
                    "subject_id": f"s{k}",
                    "detector": detector,
                    "variant": "clean",
                    "score": score,
                }
            )

    for detector in ("x", "x_df", "f"):
        add(detector, "ffpp", "real", 0, [0.1, 0.2, 0.3, 0.4])
        add(detector, "ffpp", "Deepfakes", 1, [0.35, 0.5, 0.6, 0.7])
        add(detector, "ffpp", "FaceSwap", 1, [0.05, 0.15, 0.25, 0.9])
        add(detector, "ffpp", "fwa", 1, [0.0, 0.0])  # made for training: not the dataset's
    add("x_dfdc", "dfdc", "real", 0, [0.1, 0.2])
    add("x_dfdc", "dfdc", "DFDC", 1, [0.3, 0.15])
    add("x_dfdc", "ffpp", "real", 0, [0.9])  # tested elsewhere: not its training set
    add("x_dfdc", "ffpp", "Deepfakes", 1, [0.1])
    add("x", "other", "real", 0, [0.1])  # a dataset no detector trained on: no column
    return pd.DataFrame(rows)


SETTINGS = {
    "x": {"arch": "xception", "train_dataset": "ffpp", "train_methods": ["Deepfakes", "FaceSwap"]},
    "x_df": {"arch": "xception", "train_dataset": "ffpp", "train_methods": ["Deepfakes"]},
    "x_dfdc": {"arch": "xception", "train_dataset": "dfdc", "train_methods": ["DFDC", "Deepfakes"]},
    "f": {"arch": "fwa", "train_dataset": "ffpp", "train_methods": ["fwa"]},
}


def test_a_training_set_is_a_dataset_or_the_manipulations_of_it_trained_on():
    own = ["Deepfakes", "FaceSwap"]
    assert training_set(["ffpp"], ["Deepfakes", "FaceSwap", "DFDC"], own) == ("ffpp", own)
    assert training_set(["ffpp"], ["Deepfakes"], own) == ("ffpp/Deepfakes", ["Deepfakes"])
    assert training_set(["ffpp"], ["fwa"], own) == ("ffpp", own)  # its own fakes, tested on all
    assert training_set(["a", "b"], ["m"], ["m"]) == ("a+b", ["m"])


def test_table_4_tests_each_detector_on_what_it_trained_on():
    table = in_domain_table(
        _predictions(), SETTINGS, ["ffpp", "dfdc"], average_excludes=["dfdc"]
    ).set_index("family")
    assert list(table.columns) == [
        "arch",
        "ffpp",
        "ffpp/Deepfakes",
        "dfdc",
        "average",
        "average_common",
    ]
    # x on all of FF++'s fakes (FWA's training blends left out): of the 32 (real, fake)
    # pairs, Deepfakes wins 15 and FaceSwap 0 + 1 + 2 + 4 = 7: (15 + 7) / 32
    assert table.loc["x", "ffpp"] == pytest.approx(22 / 32)
    assert table.loc["x", "ffpp/Deepfakes"] == pytest.approx(15 / 16)  # x_df, DF only
    assert table.loc["x", "dfdc"] == pytest.approx(3 / 4)  # 0.3 > both, 0.15 > 0.1
    # FF++ counts by its manipulation (not pooled), dfdc out of the common average
    assert table.loc["x", "average"] == pytest.approx((15 / 16 + 3 / 4) / 2)
    assert table.loc["x", "average_common"] == pytest.approx(15 / 16)
    # FWA trains on none of FF++'s fakes: its one FF++ detector fills FF++/Deepfakes
    assert table.loc["f", "ffpp/Deepfakes"] == pytest.approx(15 / 16)
    assert np.isnan(table.loc["f", "dfdc"])
    assert table.loc["f", "average"] == pytest.approx(15 / 16)
    plain = in_domain_table(_predictions(), SETTINGS, ["ffpp", "dfdc"])
    assert "average_common" not in plain.columns


def test_the_average_auc_against_cost_is_one_point_per_architecture(tmp_path):
    efficiency = pd.DataFrame(
        {
            "detector": ["x", "x_df", "x_dfdc", "f"],
            "params": [20.8e6] * 3 + [25.6e6],
            "gflops": [16.8] * 3 + [8.2],
            "latency_ms_bs1": [5.0, 5.2, 5.1, 10.0],
        }
    )
    detection = pd.DataFrame(
        {
            "dataset": ["ffpp", "dfdc", "ffpp", "dfdc", "ffpp", "ffpp"],
            "detector": ["x", "x", "x_df", "x_dfdc", "x_dfdc", "f"],
            "variant": "clean",
            "unit": "frame",
            "AUC": [0.9, 0.6, 0.8, 0.7, 0.5, 0.55],
        }
    )
    frame = family_efficiency(efficiency, detection, SETTINGS).set_index("detector")
    assert frame.loc["x", "AUC"] == pytest.approx(np.mean([0.9, 0.6, 0.8, 0.7, 0.5]))
    assert frame.loc["x", "n_scores"] == 5 and frame.loc["x", "dataset"] == AVERAGED
    assert frame.loc["x", "gflops"] == 16.8 and frame.loc["f", "AUC"] == 0.55
    path = efficiency_figure(efficiency, detection, tmp_path / "avg.png", families=SETTINGS)
    assert path.stat().st_size > 1000
