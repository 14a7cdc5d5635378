import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import roc_auc_score

from fairforge import tables
from fairforge.forgery import training_methods
from fairforge.metrics import Conventions, fairness_report
from fairforge.tables import (
    balanced_table,
    balanced_twins,
    describe_variant,
    detection_table,
    detector_settings_table,
    detectors_frame,
    fairness_under_perturbation,
    find_twins,
    generalization_table,
    grayscale_table,
    pvalue_table,
    robustness_table,
    sdaug_twins,
    split_variants,
    thresholds_table,
    twins_from_frame,
    variants,
)
from report_results import fairfd_xception_predictions

GROUPS = ("g0", "g1", "g2", "g3")


def predictions(
    accuracy,
    detector="det",
    variant="clean",
    dataset="data",
    split="test",
    subjects=5,
    per_subject=4,
    seed=0,
):
    """Predictions whose accuracy in group i is ``accuracy[i]``, on real and faceswap."""
    rng = np.random.default_rng(seed)
    rows = []
    for g, p in zip(GROUPS, accuracy):
        for s in range(subjects):
            for method, label in (("real", 0), ("faceswap", 1)):
                correct = rng.random(per_subject) < p
                fake = correct == (label == 1)
                score = np.where(
                    fake, rng.uniform(0.55, 1.0, per_subject), rng.uniform(0.0, 0.45, per_subject)
                )
                for k in range(per_subject):
                    rows.append(
                        {
                            "sample_id": f"{method}_{g}_{s}_{k}",
                            "dataset": dataset,
                            "split": split,
                            "label": label,
                            "method": method,
                            "group": g,
                            "subject_id": f"{g}_s{s}",
                            "detector": detector,
                            "variant": variant,
                            "score": float(score[k]),
                        }
                    )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- variants


def test_describe_variant_uses_the_registry_order_and_category():
    assert describe_variant("clean") == {
        "variant": "clean",
        "operation": "clean",
        "level": 0,
        "severity": 0,
        "category": "clean",
    }
    jpeg = describe_variant("jpeg@30")  # quality 95, 80, 60, 45, 30: 30 is the strongest
    assert (jpeg["operation"], jpeg["level"], jpeg["severity"], jpeg["category"]) == (
        "jpeg",
        30,
        5,
        "compression",
    )
    assert describe_variant("gaussian_blur@3")["severity"] == 1
    assert tables.sorted_variants(["jpeg@30", "clean", "jpeg@95", "gamma@2"]) == [
        "clean",
        "gamma@2",
        "jpeg@95",
        "jpeg@30",
    ]


@pytest.mark.parametrize("video", [True, False])
def test_unknown_operations_are_video_or_other(monkeypatch, video):
    monkeypatch.setattr(variants, "has_video_pipeline", lambda: video)
    assert describe_variant("made_up_op@2")["category"] == ("video" if video else "other")
    _, unavailable = split_variants(["clean", "made_up_op@2"])
    assert "made_up_op@2" in unavailable  # neither an image nor a video operation


def test_split_variants_reports_missing_weights():
    available, unavailable = split_variants(["jpeg@60", "learned_compression@3", "grayscale@1"])
    assert available == ["clean", "grayscale@1", "jpeg@60"]
    assert list(unavailable) == ["learned_compression@3"]
    assert "weights" in unavailable["learned_compression@3"]


# --------------------------------------------------------------------------- detection


def test_fakes_made_for_training_are_not_the_datasets_and_have_their_own_rows():
    """FairFD's SBI detector blends FF++'s real faces: those fakes are scored apart (per
    method), not pooled into FF++'s detection AUC or its generalization."""
    own = predictions((0.9, 0.8, 0.7, 0.6), seed=4)
    blends = own[own["method"] == "faceswap"].assign(
        method="sbi", sample_id=lambda f: "sbi" + f["sample_id"], score=0.01
    )
    preds = pd.concat([own, blends], ignore_index=True)
    row = detection_table(preds).set_index("unit").loc["frame"]
    assert row["AUC"] == pytest.approx(roc_auc_score(own["label"], own["score"]))
    assert row["n"] == len(own) and row["n_fake"] == (own["label"] == 1).sum()
    per_method = tables.per_method_table(preds).set_index("method")
    assert set(per_method.index) == {"faceswap", "sbi"}
    assert per_method.loc["sbi", "n_fake"] == len(blends) and per_method.loc["sbi", "AUC"] < 0.5
    assert training_methods() == ["fwa", "sbi", "xray"]


def test_detection_table_per_variant_and_video_level():
    a = predictions((0.9, 0.8, 0.7, 0.6), variant="clean", seed=1)
    b = predictions((0.6, 0.6, 0.6, 0.6), variant="jpeg@60", seed=2)
    val = predictions((0.0, 0.0, 0.0, 0.0), split="val", seed=3)  # must be ignored
    preds = pd.concat([b, a, val], ignore_index=True)
    # two frames per video: sample k // 2 of each subject and method
    preds["video_id"] = (
        preds["subject_id"]
        + "_v"
        + (preds["sample_id"].str.rsplit("_", n=1).str[1].astype(int) // 2).astype(str)
    )
    table = detection_table(preds)
    frame = table.loc[table["unit"] == "frame"].set_index("variant")
    assert list(frame.index) == ["clean", "jpeg@60"]
    assert frame.loc["clean", "AUC"] == pytest.approx(roc_auc_score(a["label"], a["score"]))
    assert frame.loc["clean", "n"] == len(a)
    video = table.loc[(table["unit"] == "video") & (table["variant"] == "clean")].iloc[0]
    # a real clip and the fake made from it share video_id but are two videos
    clean_test = (preds["variant"] == "clean") & (preds["split"] == "test")
    per_video = a.assign(v=preds.loc[clean_test, "video_id"].to_numpy())
    means = per_video.groupby(["method", "v"]).agg(
        label=("label", "first"), score=("score", "mean")
    )
    assert video["n"] == len(means)
    assert video["AUC"] == pytest.approx(roc_auc_score(means["label"], means["score"]))


def test_robustness_drop_mean_and_categories():
    detection = pd.DataFrame(
        {
            "dataset": "data",
            "detector": "det",
            "unit": "frame",
            "variant": ["clean", "jpeg@95", "jpeg@30", "gaussian_blur@3", "gamma@1"],
            "AUC": [0.9, 0.8, 0.6, 0.7, 0.5],
        }
    )
    table = robustness_table(detection)
    variants = table.loc[table["scope"] == "variant"].set_index("variant")
    assert variants.loc["clean", "drop"] == 0
    assert variants.loc["jpeg@30", "drop"] == pytest.approx(0.3)
    assert variants.loc["jpeg@30", "severity"] == 5
    categories = table.loc[table["scope"] == "category"].set_index("category")
    assert set(categories.index) == {"compression", "blur", "enhancement"}
    assert categories.loc["compression", "AUC"] == pytest.approx(0.7)
    assert categories.loc["compression", "n_variants"] == 2
    assert categories.loc["enhancement", "drop"] == pytest.approx(0.4)
    overall = table.loc[table["scope"] == "overall"].iloc[0]
    assert overall["AUC"] == pytest.approx(np.mean([0.8, 0.6, 0.7, 0.5]))  # clean excluded
    assert overall["drop"] == pytest.approx(0.9 - 0.65)
    assert overall["n_variants"] == 4


def test_robustness_by_the_assessment_categories():
    """§3.1's image categories (the Gaussian blur is denoising) and §3.2's video ones (flips,
    brightness apart from contrast), with an overall score per modality and over all."""
    from fairforge.perturb.suites import CATEGORY_SCHEMES, SUITES

    detection = pd.DataFrame(
        {
            "dataset": "data",
            "detector": "det",
            "unit": "frame",
            "variant": [
                "clean",
                "gaussian_blur@3",
                "denoise@2",
                "jpeg@30",
                "vid_hflip@1",
                "vid_lighten@1",
                "vid_contrast@1",
                "grayscale@1",
                "jpeg@random",
            ],
            "AUC": [0.9, 0.7, 0.5, 0.6, 0.8, 0.75, 0.65, 0.55, 0.4],
        }
    )
    table = robustness_table(detection, categories="assessment")
    categories = table.loc[table["scope"] == "category"].set_index("category")
    assert categories.loc["image/denoising", "AUC"] == pytest.approx(0.6)
    assert categories.loc["image/denoising", "n_variants"] == 2
    assert set(categories.index) == {
        "image/denoising",
        "image/compression",
        "video/flip",
        "video/brightness",
        "video/contrast",
        "color",  # grayscale is not the Assessment's: its own category
        "random intensity",
    }
    overall = table.loc[table["scope"] == "overall"].set_index("category")
    assert list(overall.index) == ["image", "video", "all"]
    assert overall.loc["image", "AUC"] == pytest.approx(np.mean([0.7, 0.5, 0.6]))
    assert overall.loc["video", "AUC"] == pytest.approx(np.mean([0.8, 0.75, 0.65]))
    assert overall.loc["all", "n_variants"] == 7  # every operation-level variant
    # the variant rows carry the scheme's category; the default keeps the operations' own
    variants = table.loc[table["scope"] == "variant"].set_index("variant")
    assert variants.loc["vid_lighten@1", "category"] == "video/brightness"
    own = robustness_table(detection)
    assert set(own.loc[own["scope"] == "overall", "category"]) == {"all"}
    assert "blur" in set(own["category"]) and "video" in set(own["category"])
    with pytest.raises(ValueError, match="robustness categories 'fairfd'"):
        robustness_table(detection, categories="fairfd")
    # the scheme names every operation of the Assessment's suites, six image and seven video
    # categories
    scheme = CATEGORY_SCHEMES["assessment"]
    ops = {v.split("@")[0] for v in SUITES["assessment"] + SUITES["assessment_video"]}
    assert ops == set(scheme)
    assert len({c for m, c in scheme.values() if m == "image"}) == 6
    assert len({c for m, c in scheme.values() if m == "video"}) == 7


# --------------------------------------------------------------------------- fairness


def test_fairness_under_perturbation_equals_fairness_report_per_variant():
    clean = predictions((1.0, 1.0, 1.0, 1.0), variant="clean", seed=4)
    gray = predictions((1.0, 0.5, 1.0, 0.7), variant="grayscale@1", seed=5)
    fup = fairness_under_perturbation(pd.concat([clean, gray]), Conventions(ur_denominator="acc"))
    assert list(fup["variant"]) == ["clean", "grayscale@1"]
    row = fup.set_index("variant").loc["grayscale@1"]
    expected = fairness_report(gray, Conventions(ur_denominator="acc"))
    for key, value in expected.items():
        assert row[key] == pytest.approx(value, nan_ok=True), key
    assert row["category"] == "color"
    gs = grayscale_table(fup).set_index("metric")
    assert gs.loc["AADPD", "change"] == pytest.approx(row["AADPD"] - fup.iloc[0]["AADPD"])
    assert gs.loc["AADPD", "change"] > 0.2
    assert grayscale_table(fup.loc[fup["variant"] == "clean"]).empty


def test_pvalues_small_for_a_real_gap_and_large_without_one():
    gap = predictions((0.98, 0.98, 0.3, 0.3), detector="biased", subjects=6, seed=6)
    even = predictions((0.8, 0.8, 0.8, 0.8), detector="even", subjects=6, seed=7)
    table = pvalue_table(pd.concat([gap, even]), n_perm=300, seed=1)
    chance = table.loc[table["test"] == "chance"]
    p = chance.set_index(["detector", "metric"])["p_value"]
    assert p["biased", "AADPD"] < 0.02
    assert p["even", "AADPD"] > 0.05
    assert ((table["p_value"] > 0) & (table["p_value"] <= 1)).all()
    assert list(table.columns) == [
        "dataset",
        "test",
        "detector",
        "detector_b",
        "metric",
        "value",
        "ci_low",
        "ci_high",
        "p_value",
        "p_holm",
        "n_perm",
    ]
    # paired: biased − even, the same subjects resampled for both detectors
    paired = table.loc[table["test"] == "paired"].set_index("metric")
    assert (paired["detector"] == "biased").all() and (paired["detector_b"] == "even").all()
    row = paired.loc["AADPD"]
    gaps = chance.set_index(["detector", "metric"])["value"]
    assert row["value"] == pytest.approx(gaps["biased", "AADPD"] - gaps["even", "AADPD"])
    assert row["ci_low"] > 0 and row["p_value"] < 0.02
    # Holm over the verdict's family only: AADPD and URDEOdds_<d>, chance and paired
    family = table["metric"].isin(["AADPD", "URDEOdds_one_plus_acc"])
    assert table.loc[family, "p_holm"].notna().all() and table.loc[~family, "p_holm"].isna().all()
    m = family.sum()
    assert m == 2 * 3  # 2 metrics x (2 chance tests + 1 pair)
    smallest = table.loc[family, "p_value"].min()
    assert table.loc[family, "p_holm"].min() == pytest.approx(min(1.0, m * smallest))


def test_paired_differences_use_the_same_resamples_for_both_detectors():
    from fairforge.metrics.resampling import stats_from_frame
    from fairforge.metrics.significance import paired_differences

    a = predictions((0.9, 0.6, 0.9, 0.6), detector="a", subjects=8, seed=3)
    b = a.assign(detector="b")
    same = paired_differences(stats_from_frame(a), stats_from_frame(b), 200, seed=2)
    # identical detectors: every paired replicate difference is exactly 0
    assert (same["estimate"] == 0).all() and (same["ci_low"] == 0).all()
    assert (same["ci_high"] == 0).all() and (same["p_value"] == 1).all()
    # a detector missing one subject's predictions is aligned on the union of subjects
    c = b.loc[b["subject_id"] != "g0_s0"]
    diff = paired_differences(stats_from_frame(a), stats_from_frame(c), 200, seed=2)
    assert diff["n_valid"].gt(0).all()


# --------------------------------------------------------------------------- detector twins

BASE = {
    "arch": "meso4",
    "model": {},
    "input_size": 64,
    "train_methods": ["faceswap"],
    "augment": "none",
    "balanced": False,
    "epochs": 2,
    "lr": 2e-4,
    "seed": 3,
    "threads": 2,
    "device": "auto",
    "train_dataset": "d1",
}


def test_twins_differ_in_one_setting_only():
    settings = {
        "m": BASE,
        "m_bal": {**BASE, "balanced": True, "threads": 8},
        # FairFD's balanced twin trains longer on its smaller set (§5.3.1): still a twin
        "m_bal_long": {**BASE, "balanced": {"subjects": 26, "groups": None}, "epochs": 9},
        "m_bal_lr": {**BASE, "balanced": True, "lr": 1.0},
        "m_sd": {**BASE, "augment": "sdaug"},
        "x": {**BASE, "arch": "xception"},
    }
    assert balanced_twins(settings) == [("m", "m_bal"), ("m", "m_bal_long")]
    assert sdaug_twins(settings) == [("m", "m_sd")]
    assert find_twins(settings, "augment", "none", "daug") == []
    frame = detectors_frame(settings)
    assert twins_from_frame(frame, "balanced") == [("m", "m_bal"), ("m", "m_bal_long")]
    assert twins_from_frame(frame, "sdaug") == [("m", "m_sd")]
    assert frame.set_index("detector").loc["m", "train_methods"] == "faceswap"


def test_settings_come_from_the_checkpoint(tmp_path):
    path = tmp_path / "model.pt"
    torch.save(
        {"arch": "meso4", "train_config": {**BASE, "balanced": True}, "state_dict": {}}, path
    )
    settings = detector_settings_table(
        {"a": path, "b": tmp_path / "missing.pt"},
        fallback={"b": BASE},
        train_datasets={"a": "d2", "b": "d1"},
    )
    assert settings["a"]["balanced"] is True and settings["a"]["train_dataset"] == "d2"
    assert settings["b"] == BASE


def test_balanced_table_side_by_side():
    fairness = pd.DataFrame(
        {
            "dataset": "data",
            "metric": ["AUC", "AADPD"],
            "m": [0.9, 0.2],
            "m_bal": [0.85, 0.1],
            "other": [0.5, 0.0],
        }
    )
    table = balanced_table(fairness, [("m", "m_bal")]).set_index("metric")
    assert table.loc["AADPD", "standard"] == 0.2 and table.loc["AADPD", "balanced"] == 0.1
    assert table.loc["AUC", "change"] == pytest.approx(-0.05)
    assert balanced_table(fairness, []).empty


def test_generalization_matrix_and_averages():
    auc = {
        ("m1", "d1"): 0.9,
        ("m1", "d2"): 0.6,
        ("m2", "d1"): 0.7,
        ("m2", "d2"): 0.95,
        ("x", "d1"): 0.8,
        ("x", "d2"): 0.5,
    }
    detection = pd.DataFrame(
        [
            {"dataset": ds, "detector": d, "variant": "clean", "unit": "frame", "AUC": v}
            for (d, ds), v in auc.items()
        ]
        + [{"dataset": "d1", "detector": "m1", "variant": "jpeg@60", "unit": "frame", "AUC": 0.1}]
    )
    settings = {
        "m1": BASE,
        "m2": {**BASE, "train_dataset": "d2"},
        "x": {**BASE, "arch": "xception"},
    }
    table = generalization_table(detection, settings)
    assert list(table.columns) == ["family", "detector", "train_dataset", "d1", "d2", "average"]
    meso = table.loc[table["family"] == "m1"].set_index("detector")
    assert list(meso.index) == ["m1", "m2", "average"]
    assert meso.loc["m1", "average"] == pytest.approx(0.75)
    assert meso.loc["average", "d1"] == pytest.approx(0.8)
    assert meso.loc["average", "d2"] == pytest.approx(0.775)
    assert meso.loc["average", "average"] == pytest.approx((0.75 + 0.825) / 2)
    assert meso.loc["m2", "train_dataset"] == "d2"
    assert set(table.loc[table["family"] == "x", "detector"]) == {"x", "average"}
    # the average per training set: every detector trained on it, over the families
    per_train = table.loc[table["family"] == "average"].set_index("train_dataset")
    assert list(per_train.index) == ["d1", "d2"]
    assert per_train.loc["d1", "d1"] == pytest.approx((0.9 + 0.8) / 2)
    assert per_train.loc["d1", "average"] == pytest.approx((0.75 + 0.65) / 2)
    assert per_train.loc["d2", "d2"] == pytest.approx(0.95)
    pooled = generalization_table(detection, {**settings, "m2": {**BASE, "train_dataset": "d1+d2"}})
    assert "d1+d2" in set(pooled.loc[pooled["family"] == "m1", "train_dataset"])
    one = generalization_table(detection.loc[detection["dataset"] == "d1"], settings)
    assert list(one.columns) == ["note"] and "one dataset" in one["note"].iloc[0]


def test_tables_from_files_match_tables_of_the_pooled_frame(tmp_path):
    from fairforge.manifest import write_manifest

    parts = [
        predictions((0.9, 0.7, 0.8, 0.6), detector=d, variant=v, seed=i)
        for i, (d, v) in enumerate([("b", "jpeg@30"), ("a", "clean"), ("b", "clean")])
    ]
    paths = []
    for i, part in enumerate(parts):
        paths.append(tmp_path / f"{i}.parquet")
        write_manifest(part, paths[-1], contract="predictions")
    pooled = pd.concat(parts, ignore_index=True)
    from_files = tables.table_from_files(paths, detection_table)
    pd.testing.assert_frame_equal(from_files, detection_table(pooled))
    assert list(zip(from_files["detector"], from_files["variant"])) == [
        ("a", "clean"),
        ("b", "clean"),
        ("b", "jpeg@30"),
    ]
    fup = tables.table_from_files(paths, fairness_under_perturbation)
    pd.testing.assert_frame_equal(fup, fairness_under_perturbation(pooled))


# --------------------------------------------------------------------------- efficiency, forgeries, exposure


def test_efficiency_with_metric_pairs_each_cost_with_the_clean_auc_per_dataset():
    detection = pd.DataFrame(
        [
            {"dataset": ds, "detector": d, "variant": v, "unit": u, "AUC": auc}
            for ds, d, v, u, auc in [
                ("d1", "a", "clean", "frame", 0.9),
                ("d1", "a", "clean", "video", 0.1),
                ("d1", "a", "jpeg@30", "frame", 0.2),
                ("d2", "a", "clean", "frame", 0.7),
                ("d1", "svm", "clean", "frame", 0.6),
            ]
        ]
    )
    efficiency = pd.DataFrame(
        [
            {"detector": "a", "params": 10, "gflops": 0.5, "latency_ms_bs1": 2.0},
            {"detector": "svm", "note": "classical"},
        ]
    )
    table = tables.efficiency_with_metric(efficiency, detection)
    assert list(table[["detector", "dataset"]].itertuples(index=False, name=None)) == [
        ("a", "d1"),
        ("a", "d2"),
        ("svm", "d1"),
    ]
    assert table["AUC"].tolist() == [0.9, 0.7, 0.6]  # frame-level, clean only
    assert table.loc[table["detector"] == "svm", "gflops"].isna().all()
    assert table.loc[table["detector"] == "a", "params"].tolist() == [10, 10]


def test_forgery_success_table_counts_made_and_reasons_per_group(tmp_path):
    specs = {
        ("d1", "faceswap"): ([True, False, True, True], ["", "no face", "", ""]),
        ("d1", "blend"): ([False, False, True, True], ["no face", "bad mask", "", ""]),
        ("d2", "faceswap"): ([True, True, True, True], [""] * 4),
    }
    paths = []
    for (dataset, method), (ok, reasons) in specs.items():
        path = tmp_path / dataset / "forgeries" / f"{method}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(
            {"method": method, "group": ["g0", "g0", "g1", "g1"], "ok": ok, "reason": reasons}
        ).to_parquet(path)
        paths.append(path)
    table = tables.forgery_success_table(paths).set_index(["dataset", "method", "group"])
    assert list(table.index.get_level_values(0).unique()) == ["d1", "d2"]
    assert table.loc[("d1", "faceswap", "g0"), ["attempted", "made"]].tolist() == [2, 1]
    assert table.loc[("d1", "faceswap", "g0"), "success_rate"] == 0.5
    assert table.loc[("d1", "faceswap", "g1"), "success_rate"] == 1.0
    assert table.loc[("d1", "faceswap", "g0"), "failures"] == '{"no face": 1}'
    assert table.loc[("d1", "blend", "g0"), "failures"] == '{"bad mask": 1, "no face": 1}'
    assert table.loc[("d1", "blend", "(all)"), ["attempted", "made", "success_rate"]].tolist() == [
        4,
        2,
        0.5,
    ]
    assert table.loc[("d2", "faceswap", "(all)"), "failures"] == "{}"
    wide = tables.rate_cells(
        tables.forgery_success_table(paths),
        ["dataset", "method"],
        "success_rate",
        "made",
        "attempted",
    )
    assert list(wide.columns) == ["dataset", "method", "g0", "g1", "(all)"]
    assert wide.iloc[0].tolist() == ["d1", "blend", "0.000 (0/2)", "1.000 (2/2)", "0.500 (2/4)"]


def exposure_rows():
    fp = {
        ("e1", "reidentification"): (0.2, 0.5, 0.3),
        ("e1", "identification"): (0.4, 0.2, 0.4),
        ("e2", "reidentification"): (0.1, 0.3, 0.6),
    }
    rows = []
    for (encoder, setting), values in fp.items():
        for convention, vals in (("all", (0.6, 0.2, 0.2)), ("false_positive", values)):
            rows.append(
                {
                    "encoder": encoder,
                    "setting": setting,
                    "distance": 2,
                    "convention": convention,
                    "hit_ratio@1": 0.5,
                    "n_probes": 9,
                    **{f"visibility_g{i}": v for i, v in enumerate(vals)},
                    **{f"exposure_g{i}": v for i, v in enumerate(vals)},
                    "disparate_visibility": 0.2,
                    "disparate_exposure": 0.2,
                }
            )
    return pd.DataFrame(rows)


def test_most_exposed_groups_takes_the_false_positive_convention_and_breaks_ties_by_name():
    top = tables.most_exposed_groups(exposure_rows())
    assert list(zip(top["encoder"], top["setting"], top["group"], top["runner_up"])) == [
        ("e1", "reidentification", "g1", "g2"),
        ("e1", "identification", "g0", "g2"),
        ("e2", "reidentification", "g2", "g1"),
    ]
    assert top["exposure"].tolist() == [0.5, 0.4, 0.6]
    assert tables.most_exposed_groups(exposure_rows(), "all")["group"].tolist() == ["g0"] * 3
    summary = tables.exposure_summary(exposure_rows())
    assert list(summary.columns[:7]) == [
        "distance",
        "encoder",
        "setting",
        "convention",
        "hit_ratio@1",
        "disparate_visibility",
        "disparate_exposure",
    ]
    assert "n_probes" not in summary.columns


def test_exposure_matrix_puts_gallery_groups_in_columns_per_probe_group():
    rows = [
        {
            "encoder": e,
            "setting": s,
            "convention": "all",
            "probe_group": p,
            "gallery_group": g,
            "n_probes": 3 + (p == "b"),
            "visibility": 0.1 * (i + 1) + (e == "z"),
            "exposure": 0.01 * (i + 1),
        }
        for e in ("z", "a")
        for s in ("reidentification", "identification")
        for i, (p, g) in enumerate(itertools.product("ba", "ab"))
    ]
    wide = tables.exposure_matrix(pd.DataFrame(rows))
    assert list(wide.columns) == [
        "encoder",
        "setting",
        "convention",
        "probe_group",
        "n_probes",
        "visibility of a",
        "visibility of b",
        "exposure of a",
        "exposure of b",
    ]
    # file order of encoders and settings, probe groups by name
    assert list(zip(wide["encoder"], wide["setting"], wide["probe_group"]))[:3] == [
        ("z", "reidentification", "a"),
        ("z", "reidentification", "b"),
        ("z", "identification", "a"),
    ]
    row = wide.loc[
        (wide["encoder"] == "a")
        & (wide["setting"] == "identification")
        & (wide["probe_group"] == "b")
    ].iloc[0]
    assert row["n_probes"] == 4
    assert row["visibility of a"] == pytest.approx(0.1) and row["visibility of b"] == pytest.approx(
        0.2
    )
    assert row["exposure of b"] == pytest.approx(0.02)
    # several studies (datasets, distances) stay apart, each with its own rows
    studies = pd.DataFrame(
        [
            {**r, "dataset": d, "distance": x, "visibility": r["visibility"] + x}
            for d in ("one", "two")
            for x in (3, 5)
            for r in rows
        ]
    )
    wide = tables.exposure_matrix(studies)
    assert list(wide.columns[:3]) == ["dataset", "distance", "encoder"]
    assert len(wide) == 2 * 2 * 2 * 2 * 2  # datasets, distances, encoders, settings, groups
    far = wide[(wide["dataset"] == "two") & (wide["distance"] == 5)]
    assert far.iloc[0]["visibility of a"] == pytest.approx(wide.iloc[0]["visibility of a"] + 2)
    summary = tables.exposure_summary(exposure_rows().assign(dataset="one"))
    assert list(summary.columns[:3]) == ["dataset", "distance", "encoder"]
    top = tables.most_exposed_groups(exposure_rows().assign(dataset="one"))
    assert top.columns[0] == "dataset" and set(top["dataset"]) == {"one"}


def test_thresholds_table_reproduces_fairfd_table_5b_when_configured_as_the_paper():
    """FairFD Table 5(b) at threshold 0.5: the Real and FaceSwap rows of the Xception
    accuracy matrix, UR denominator Ā (config metrics.thresholds)."""
    from fairforge.tables.fairness import thresholds_options

    per_cell = 10_000
    preds, ref = fairfd_xception_predictions(per_cell=per_cell)
    metrics = {
        "threshold": 0.5,
        "ur_denominator": "one_plus_acc",  # the run's; the study overrides it
        "threshold_rule": ">=",  # FairFD's code; no score lies on 0.5, so it changes nothing
        "eer": "nearest",
        "thresholds": {"approaches": ["real", "faceswap"], "ur_denominator": "acc"},
    }
    table = thresholds_table(preds, **thresholds_options(metrics)).set_index("metric")
    for key, value in ref["table5b_threshold_0.5_real_and_faceswap_only"].items():
        name = f"{key}_acc" if key.startswith("UR") else key
        assert table.loc[name, "global"] == pytest.approx(value, abs=ref["tolerance"]), key
    assert table.loc["n_samples", "global"] == 2 * 4 * per_cell
    # the validation data are separable at 0.5, so the fitted thresholds stay there
    assert (table.loc[[f"threshold[{g}]" for g in ref["groups"]], "per_group"] == 0.5).all()
    assert not any(m.endswith("_one_plus_acc") for m in table.index)


def test_fairness_outputs_name_undefined_metrics_and_dropped_resamples(caplog):
    from fairforge.tables import fairness_outputs
    from fairforge.tables.fairness import dropped_resamples_note

    preds = predictions((0.9, 0.8, 0.7, 0.6), subjects=6)
    # group g3 loses its real samples: the cell (real, g3) is empty and g3 has one class
    preds = preds.loc[~((preds["group"] == "g3") & (preds["method"] == "real"))]
    # in g2, only one subject has faceswap samples: resamples without it empty that cell
    drop = (preds["group"] == "g2") & (preds["method"] == "faceswap")
    preds = preds.loc[~drop | (preds["subject_id"] == "g2_s0")]
    with caplog.at_level("WARNING"):
        out = fairness_outputs(preds, bootstrap=200, seed=1)
    table = out["table"].set_index("metric")
    assert np.isfinite(table.loc["AADPD", "det"])  # over the defined cells, not NaN
    assert "computed without the empty cell(s) (real, g3)" in table.loc["AADPD", "reason"]
    assert np.isnan(table.loc["pooled_DEOdds", "det"])
    assert "g3 have no real sample" in table.loc["pooled_DEOdds", "reason"]
    assert table.loc["pooled_DPD", "reason"] == ""
    ci = out["ci"].set_index("metric")
    # P(no draw of g2_s0 among 6 draws) = (5/6)^6 ~ 0.33 of the resamples are dropped
    share = ci.loc["AADPD", "dropped_share"]
    assert 0.2 < share < 0.5 and ci.loc["AADPD", "n_valid"] == round(200 * (1 - share))
    assert "(real, g3)" in ci.loc["AADPD", "reason"]
    assert "Warning" in dropped_resamples_note(out["ci"])
    assert "Bootstrap resamples dropped" in caplog.text and "Warning" in caplog.text


def test_detectors_under_the_auc_bar_are_flagged_not_trained_enough():
    from fairforge.tables.detectors import detectors_frame, undertrained

    settings = {"a": {"arch": "meso4"}, "b": {"arch": "meso4"}, "c": {"arch": "meso4"}}
    frame = detectors_frame(settings, {"a": 0.93, "b": 0.55, "c": float("nan")})
    assert frame.set_index("detector")["trained_enough"].to_dict() == {
        "a": True,
        "b": False,
        "c": "",
    }
    assert undertrained(frame) == ["b"]
    import io

    assert undertrained(pd.read_csv(io.StringIO(frame.to_csv(index=False)))) == ["b"]
    assert "trained_enough" not in detectors_frame(settings).columns


# --------------------------------------------------------------------------- failures, standing


def failure_rows(dataset, stage, failed, n=24):
    return [
        {
            "stage": stage,
            "group": g,
            "n": n,
            "n_failed": k,
            "failure_rate": k / n,
            "reasons": "",
            "dataset": dataset,
        }
        for g, k in zip(GROUPS, failed)
    ]


def test_failure_rates_get_intervals_and_one_holm_adjusted_test_per_stage():
    from fairforge.metrics.rates import equal_rates_test, wilson_interval
    from fairforge.tables.failures import RATE_COLUMNS

    failures = pd.DataFrame(
        failure_rows("d1", "faces", [0, 1, 0, 0])
        + failure_rows("d1", "forgery:maskgan", [17, 7, 0, 0])
        + failure_rows("d2", "faces", [0, 0, 0, 0])
    )
    table = tables.failure_rates_table(failures)
    assert list(table.columns) == [*failures.columns, *RATE_COLUMNS]
    pd.testing.assert_frame_equal(table[failures.columns], failures)  # rows and values kept
    low, high = wilson_interval(failures["n_failed"], failures["n"])
    np.testing.assert_allclose(table["ci_low"], low)
    np.testing.assert_allclose(table["ci_high"], high)
    maskgan = table.loc[table["stage"] == "forgery:maskgan"]
    reference = equal_rates_test([17, 7, 0, 0], [24] * 4)
    assert set(maskgan["test"]) == {"chi-square"}  # expected counts 6 and 18
    assert set(maskgan["p_value"]) == {reference.p_value}
    # Holm over the three (dataset, stage) tests: the smallest p is multiplied by 3
    assert maskgan["p_holm"].tolist() == pytest.approx([3 * reference.p_value] * 4)
    faces = table.loc[(table["dataset"] == "d1") & (table["stage"] == "faces")]
    assert set(faces["test"]) == {"Freeman-Halton exact"}
    assert faces["p_value"].tolist() == pytest.approx([1.0] * 4)  # every table as likely
    assert tables.group_dependent_failures(table, 0.05) == [
        f"d1: the failure rate of forgery:maskgan depends on group (chi-square test, "
        f"p={reference.p_value:.3g}, Holm-adjusted p={3 * reference.p_value:.3g}); failed: "
        "g0 17/24, g1 7/24, g2 0/24, g3 0/24."
    ]
    assert tables.forgery_shortfalls(failures, 0.9) == {
        "d1": [
            "maskgan made fakes for 7 of 24 g0 images (29%)",
            "maskgan made fakes for 17 of 24 g1 images (71%)",
        ]
    }
    assert tables.forgery_shortfalls(failures, 0.3) == {
        "d1": ["maskgan made fakes for 7 of 24 g0 images (29%)"]
    }


def constant_predictions(detector, seed=0, called="fake"):
    """A detector that learned nothing: every sample on one side of the threshold."""
    preds = predictions((1.0, 1.0, 1.0, 1.0), detector=detector, seed=seed)
    rng = np.random.default_rng(seed)
    low, high = (0.51, 1.0) if called == "fake" else (0.0, 0.49)
    return preds.assign(score=rng.uniform(low, high, len(preds)))


def test_an_untrained_detector_keeps_its_numbers_but_every_gap_says_why_it_is_not_judged():
    from fairforge.tables.standing import NOT_JUDGED_ROWS, TrainingRecord

    preds = pd.concat(
        [predictions((0.95, 0.9, 0.95, 0.9), detector="good"), constant_predictions("untrained")]
    )
    training = {"good": TrainingRecord(0.91, True), "untrained": TrainingRecord(0.53, True)}
    failures = pd.DataFrame(
        failure_rows("data", "forgery:faceswap", [0, 17, 0, 0])
        + failure_rows("data", "faces", [0, 1, 0, 0])
    )
    out = tables.fairness_outputs(preds, bootstrap=20, seed=1, training=training, failures=failures)
    table = out["table"].set_index("metric")
    # calling every face fake gives every group the same accuracy: the gaps are 0
    assert table.loc["AADPD", "untrained"] == 0 and table.loc["DPD", "untrained"] == 0
    why = (
        "untrained: not trained enough to judge: validation AUC 0.53, under "
        "metrics.min_val_auc 0.7; constant predictions: 100% of real and 100% of fake "
        "samples called fake"
    )
    note = "faceswap made fakes for 7 of 24 g1 images (29%)"
    for metric, reason in table["reason"].items():
        if metric in NOT_JUDGED_ROWS:
            assert reason == "", metric
        else:
            assert reason == f"{why}; {note}", metric  # "good" is judged: no reason of its own
    ci = out["ci"].set_index(["detector", "metric"])
    assert ci.loc[("untrained", "AADPD"), "reason"] == f"{why.removeprefix('untrained: ')}; {note}"
    assert ci.loc[("good", "AADPD"), "reason"] == note
    standing = out["standing"].set_index("detector")
    assert standing["judged"].to_dict() == {"good": True, "untrained": False}
    assert standing.loc["untrained", ["called_fake_real", "called_fake_fake"]].tolist() == [1, 1]
    assert standing.loc["good", "val_auc"] == 0.91 and standing.loc["good", "reason"] == ""
    # without training records and failures nothing is added to a judged detector's reasons
    plain = tables.fairness_outputs(predictions((0.95, 0.9, 0.95, 0.9), detector="good"))
    assert (plain["table"]["reason"] == "").all() and plain["standing"]["judged"].all()


def test_standing_without_a_validation_auc_is_judged_on_the_evaluated_split():
    from fairforge.tables.standing import TrainingRecord, detector_standing

    chance = predictions((0.5, 0.5, 0.5, 0.5), seed=3)
    good = predictions((0.95, 0.95, 0.9, 0.9), seed=3)
    no_val = detector_standing(good, TrainingRecord(float("nan"), True))
    assert not no_val["judged"]
    assert no_val["reason"] == (
        "not trained enough to judge: no validation AUC, its validation split had no real "
        "or no fake sample"
    )
    imported = detector_standing(chance, TrainingRecord(float("nan"), False))
    auc = roc_auc_score(chance["label"], chance["score"])
    assert auc < 0.7 and not imported["judged"]
    assert imported["reason"] == (
        f"not trained enough to judge: AUC {auc:.3g} on the evaluated split, under "
        "metrics.min_val_auc 0.7 (imported weights: no validation AUC)"
    )
    assert "(scores from a file: no validation AUC)" in detector_standing(chance, None)["reason"]
    assert detector_standing(good, TrainingRecord(float("nan"), False))["judged"]
    assert detector_standing(good, None, min_val_auc=0.99)["judged"] is False
    real = detector_standing(constant_predictions("d", called="real"), None)
    assert (
        "constant predictions: 100% of real and 100% of fake samples called real"
        in (real["reason"])
    )
    # mostly fakes, each class called right: not constant, although 19 of 20 are called fake
    skewed = good.loc[(good["label"] == 1) | (good.groupby("label").cumcount() < 4)]
    assert detector_standing(skewed, TrainingRecord(0.9, True))["judged"]


def test_training_logs_give_the_best_validation_auc_or_say_imported(tmp_path):
    from fairforge.tables.standing import TrainingRecord

    trained = tmp_path / "models" / "a" / "training_log.csv"
    trained.parent.mkdir(parents=True)
    pd.DataFrame({"epoch": [1, 2, 3], "val_auc": [0.55, 0.62, np.nan]}).to_csv(trained, index=False)
    one_class = tmp_path / "models" / "b" / "training_log.csv"
    one_class.parent.mkdir(parents=True)
    pd.DataFrame({"epoch": [1, 2], "val_auc": [np.nan, np.nan]}).to_csv(one_class, index=False)
    imported = tmp_path / "models" / "c" / "training_log.csv"
    imported.parent.mkdir(parents=True)
    imported.write_text("imported,/weights/c.pt\n")  # as scripts/train.py writes it
    records = tables.training_records([trained, one_class, imported])
    assert records["a"] == TrainingRecord(0.62, True)
    assert np.isnan(records["b"].val_auc) and records["b"].trained
    assert np.isnan(records["c"].val_auc) and not records["c"].trained


def test_the_config_defaults_are_the_bars_the_functions_use():
    import inspect

    from fairforge.config import load_schema, validate_config
    from fairforge.tables.detectors import TRAINED_ENOUGH_AUC
    from fairforge.tables.standing import MAX_CONSTANT_SHARE, MIN_FORGERY_SUCCESS

    metrics = load_schema()["properties"]["metrics"]["properties"]
    assert metrics["min_val_auc"]["default"] == TRAINED_ENOUGH_AUC
    assert metrics["max_constant_share"]["default"] == MAX_CONSTANT_SHARE
    assert metrics["min_forgery_success"]["default"] == MIN_FORGERY_SUCCESS
    # the rule hands the validated metrics block to fairness_outputs as it is
    config = validate_config({"metrics": {"min_val_auc": 0.6}}, check_references=False)
    options = tables.fairness_options(config["metrics"])
    assert options["min_val_auc"] == 0.6 and options["min_forgery_success"] == 0.9
    assert set(options) <= set(inspect.signature(tables.fairness_outputs).parameters)
