"""The report builds from a small results tree written the way the report rules write it."""
import base64
import re

import numpy as np
import pandas as pd
import pytest

from fairforge import figures
from fairforge.analysis import fairness_outputs
from fairforge.report import FIGURES, TABLES, build_report, report_inputs
from fairforge.tables import (balanced_table, balanced_twins, detection_table, detectors_frame,
                              fairness_under_perturbation, generalization_table, grayscale_table,
                              pvalue_table, robustness_table, thresholds_table, twins_from_frame)

GROUPS = ("tone1", "tone2", "tone3", "tone4")
EVEN, MILD, UNEVEN = (1.0, 1.0, 1.0, 1.0), (0.95, 1.0, 1.0, 0.85), (0.98, 0.9, 0.5, 0.4)
# accuracy per group of each detector under each variant: under jpeg@60 the ranking flips
ACCURACY = {("fair", "clean"): EVEN, ("fair", "jpeg@60"): UNEVEN, ("fair", "grayscale@1"): EVEN,
            ("fair_sd", "clean"): MILD, ("fair_sd", "jpeg@60"): MILD,
            ("fair_sd", "grayscale@1"): MILD,
            ("biased", "clean"): UNEVEN, ("biased", "jpeg@60"): EVEN,
            ("biased", "grayscale@1"): UNEVEN}
BASE = {"arch": "meso4", "model": {}, "input_size": 64, "train_methods": ["faceswap"],
        "augment": "none", "balanced": False, "epochs": 1, "lr": 2e-4, "seed": 0,
        "train_dataset": "synthetic"}
SETTINGS = {"fair": BASE, "fair_sd": {**BASE, "augment": "sdaug"},
            "biased": {**BASE, "balanced": True}}
CONFIG = {"datasets": {"synthetic": {"adapter": "synthetic", "group_by": ["tone"]}},
          "variants": ["clean", "jpeg@60", "grayscale@1", "learned_compression@2"],
          "metrics": {"threshold": 0.5, "ur_denominator": "acc", "bootstrap": 40,
                      "evaluation_split": "test"}}


def predictions(detector, variant, split, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for g, p in zip(GROUPS, ACCURACY[detector, variant]):
        for s in range(6):
            for method, label in (("real", 0), ("faceswap", 1)):
                correct = rng.random(5) < p
                fake = correct == (label == 1)
                score = np.where(fake, rng.uniform(0.55, 1, 5), rng.uniform(0, 0.45, 5))
                rows += [{"sample_id": f"{method}_{g}_{s}_{k}", "dataset": "synthetic",
                          "split": split, "label": label, "method": method, "group": g,
                          "subject_id": f"{g}_{s}", "detector": detector, "variant": variant,
                          "score": np.float32(score[k])} for k in range(5)]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """What the rules write: tables, figures, a forgery manifest and failure counts."""
    out = tmp_path_factory.mktemp("run") / "results"
    (out / "synthetic" / "forgeries").mkdir(parents=True)
    preds = pd.concat([predictions(d, v, split, seed=i * 2 + (split == "val"))
                       for i, (d, v) in enumerate(ACCURACY) for split in ("val", "test")],
                      ignore_index=True)
    m = CONFIG["metrics"]
    clean = preds.loc[preds["variant"] == "clean"]
    test = clean.loc[clean["split"] == "test"]
    for name, frame in fairness_outputs(test, ur_denominator=m["ur_denominator"],
                                        bootstrap=m["bootstrap"]).items():
        frame.to_csv(out / {"table": "fairness_table.csv", "per_group": "fairness_per_group.csv",
                            "ci": "fairness_ci.csv"}[name], index=False)
    detection = detection_table(preds)
    detection.to_csv(out / TABLES["detection"], index=False)
    robustness = robustness_table(detection)
    robustness.to_csv(out / TABLES["robustness"], index=False)
    fup = fairness_under_perturbation(preds, ur_denominator=m["ur_denominator"])
    fup.to_csv(out / TABLES["fairness_under_perturbation"], index=False)
    grayscale_table(fup).to_csv(out / TABLES["grayscale"], index=False)
    pvalue_table(preds, n_perm=200, ur_denominator=m["ur_denominator"]).to_csv(
        out / TABLES["pvalues"], index=False)
    thresholds_table(preds, ur_denominator=m["ur_denominator"]).to_csv(
        out / TABLES["thresholds"], index=False)
    detectors = detectors_frame(SETTINGS)
    detectors.to_csv(out / TABLES["detectors"], index=False)
    balanced_table(pd.read_csv(out / "fairness_table.csv"), balanced_twins(SETTINGS)).to_csv(
        out / TABLES["balanced"], index=False)
    generalization_table(detection, SETTINGS).to_csv(out / TABLES["generalization"], index=False)
    pd.DataFrame({"sample_id": [f"f{i}" for i in range(10)], "method": "faceswap",
                  "backend": "classical", "ok": [True] * 9 + [False]}).to_parquet(
        out / "synthetic" / "forgeries" / "faceswap.parquet")
    failures = pd.DataFrame([{"stage": stage, "group": g, "n": 20, "n_failed": k,
                              "failure_rate": k / 20, "reasons": "", "dataset": "synthetic"}
                             for stage in ("sources", "faces", "forgery:faceswap")
                             for k, g in enumerate(GROUPS)])
    failures.to_csv(out / TABLES["failures"], index=False)
    figures.robustness_figure(robustness, out / FIGURES["robustness_figure"],
                              twins=twins_from_frame(detectors, "sdaug"))
    figures.fairness_heatmap(fup, out / FIGURES["fairness_heatmap"],
                             figures.default_heatmap_metrics(m["ur_denominator"]))
    figures.score_distributions(preds, out / FIGURES["score_distributions"])
    figures.failure_figure(failures, out / FIGURES["failures_figure"])
    return out


@pytest.fixture(scope="module")
def page(results):
    return build_report(report_inputs(results, ["synthetic"], ["faceswap"]), CONFIG)


def text_of(page: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def test_every_section_table_and_figure_is_in_the_report(page, results):
    for anchor in ("verdict", "run", "detection", "fairness", "robustness", "fairness-perturbed",
                   "thresholds", "grayscale", "balanced", "generalization", "scores",
                   "failures", "glossary"):
        assert f'<section id="{anchor}">' in page, anchor
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == len(FIGURES)
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images)
    text = text_of(page)
    for marker in ("threshold[tone3]", "URDEOdds_acc", "overall robustness score",
                   "grayscale@1", "jpeg@60", "balanced_twin_of", "fair_sd", "forgery:faceswap",
                   "p=", "[95% CI"):
        assert marker in text, marker
    assert "0.150 (3/20)" in text  # failure rate of the fourth group
    assert "one dataset configured" in text


def test_run_facts_conventions_and_synthetic_warning(page):
    text = text_of(page)
    assert "groups are skin-tone bins of a synthetic renderer, not races" in text
    assert "classical" in text and "faceswap" in text
    unavailable = text[text.index("Unavailable"):text.index("Conventions")]
    assert "learned_compression@2" in unavailable and "weights" in unavailable
    assert "d_f = mean accuracy" in text  # ur_denominator: acc
    assert "40 subject-level bootstrap resamples" in text


def test_verdict_names_the_fairest_detector_and_the_variant_that_flips_it(page):
    verdict = text_of(page.split('<section id="run">')[0].split('<section id="verdict">')[1])
    assert "By AADPD (lower is fairer)" in verdict
    assert "the fairest detector is fair: 0 [95% CI 0, 0]; next is fair_sd" in verdict
    assert "biased p=" in verdict and "larger than chance" in verdict
    assert "changes under 1 of 2 variants: jpeg@60" in verdict
    assert "Caution" not in verdict  # the detectors here are far from chance


def test_report_is_deterministic_and_names_missing_inputs(results, page, tmp_path):
    assert build_report(report_inputs(results, ["synthetic"], ["faceswap"]), CONFIG) == page
    robustness = pd.read_csv(results / TABLES["robustness"])
    a = figures.robustness_figure(robustness, tmp_path / "a.png", twins=[("fair", "fair_sd")])
    b = figures.robustness_figure(robustness, tmp_path / "b.png", twins=[("fair", "fair_sd")])
    assert a.read_bytes() == b.read_bytes()
    assert b"Software" not in a.read_bytes()
    paths = report_inputs(results, ["synthetic"], ["faceswap"])
    paths["thresholds"] = tmp_path / "nope.csv"
    with pytest.raises(FileNotFoundError, match="thresholds"):
        build_report(paths, CONFIG)
