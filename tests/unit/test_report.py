"""The report builds from a small results tree written the way the report rules write it."""

import base64
import html
import re

import numpy as np
import pandas as pd
import pytest

from fairforge.metrics import Conventions
from fairforge.report import build_report, figures, report_inputs
from fairforge.tables import (
    failure_rates_table,
    fairness_outputs,
    fairness_under_perturbation,
    pvalue_table,
)
from report_results import CONFIG, FAIRNESS_OUTPUTS, all_predictions

NO_RANKING = {**CONFIG, "ranking": {"enabled": False}}


@pytest.fixture(scope="module")
def page(results):
    return build_report(report_inputs(results, ["synthetic"], ["faceswap"]), CONFIG)


def text_of(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


@pytest.fixture(scope="module")
def page_without_ranking(results):
    return build_report(
        report_inputs(results, ["synthetic"], ["faceswap"], ranking=False), NO_RANKING
    )


def section(page: str, anchor: str) -> str:
    start = page.index(f'<section id="{anchor}">')
    return text_of(page[start : page.index("</section>", start)])


def test_every_section_table_and_figure_is_in_the_report(page, results):
    for anchor in (
        "verdict",
        "run",
        "protocol",
        "detection",
        "fairness",
        "robustness",
        "fairness-perturbed",
        "thresholds",
        "grayscale",
        "balanced",
        "generalization",
        "efficiency",
        "exposure",
        "scores",
        "forgeries",
        "failures",
        "glossary",
    ):
        assert f'<section id="{anchor}">' in page, anchor
        assert f'href="#{anchor}"' in page, anchor
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    # the five run figures, the one dataset's forgery sheet, the two exposure figures and
    # the one method's forgery quality figure
    assert len(images) == 5 + 4
    embedded = {base64.b64decode(i) for i in images}
    for path in (
        results / "figures" / "synthetic" / "forgery_examples.png",
        results / "figures" / "exposure.png",
        results / "figures" / "exposure_averaged.png",
        results / "figures" / "efficiency.png",
        results / "figures" / "forgery_quality" / "faceswap.png",
    ):
        assert path.read_bytes() in embedded, path.name
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images)
    text = text_of(page)
    for marker in (
        "threshold[tone3]",
        "URDEOdds_acc",
        "overall robustness score",
        "grayscale@1",
        "jpeg@60",
        "balanced_twin_of",
        "fair_sd",
        "forgery:faceswap",
        "p=",
        "[95% CI",
    ):
        assert marker in text, marker
    assert "0.150 (3/20)" in text  # failure rate of the fourth group
    assert "one dataset configured" in text


def test_run_facts_conventions_and_synthetic_warning(page):
    text = text_of(page)
    assert "groups are skin-tone bins of a synthetic renderer, not races" in text
    assert "classical" in text and "faceswap" in text
    unavailable = text[text.index("Unavailable") : text.index("Conventions")]
    assert "learned_compression@2" in unavailable and "weights" in unavailable
    assert "d_f = mean accuracy" in text  # ur_denominator: acc
    assert "40 subject-level bootstrap resamples" in text


def test_verdict_names_the_fairest_detector_and_the_variant_that_flips_it(page):
    verdict = text_of(page.split('<section id="run">')[0].split('<section id="verdict">')[1])
    assert "By AADPD (lower is fairer)" in verdict
    assert "the fairest detector is fair: 0 [95% CI 0, 0]; next is fair_sd" in verdict
    assert "biased p=" in verdict and "larger than chance" in verdict
    # detectors are compared by paired resampling, judged after Holm's adjustment
    assert "Paired subject-level comparison of fair − fair_sd" in verdict
    assert "Holm-adjusted p=" in verdict and "after adjustment" in verdict
    assert "Paired comparisons of AADPD (every pair of detectors" in verdict
    assert "overlap" not in verdict  # no sentence rests on interval overlap
    assert "changes under 1 of 2 variants: jpeg@60" in verdict
    assert "Caution" not in verdict  # the detectors here are far from chance


def test_report_is_deterministic_and_names_missing_inputs(results, page, tmp_path):
    assert build_report(report_inputs(results, ["synthetic"], ["faceswap"]), CONFIG) == page
    robustness = pd.read_csv(results / "robustness_table.csv")
    a = figures.robustness_figure(robustness, tmp_path / "a.png", twins=[("fair", "fair_sd")])
    b = figures.robustness_figure(robustness, tmp_path / "b.png", twins=[("fair", "fair_sd")])
    assert a.read_bytes() == b.read_bytes()
    assert b"Software" not in a.read_bytes()
    paths = report_inputs(results, ["synthetic"], ["faceswap"])
    paths["thresholds"] = tmp_path / "nope.csv"
    with pytest.raises(FileNotFoundError, match="thresholds"):
        build_report(paths, CONFIG)


def test_efficiency_section_has_costs_device_auc_and_the_classical_note(page, results):
    text = section(page, "efficiency")
    assert "Measured on cpu (fp32)." in text
    assert "median time per image" in text and "warm-up" in text
    for column in (
        "gflops",
        "params",
        "latency_ms_bs1",
        "latency_ms_bs32",
        "AUC clean (synthetic)",
    ):
        assert column in text, column
    assert "classical detector: cost is dlib landmarks + SVM" in text
    detection = pd.read_csv(results / "detection_table.csv")
    auc = detection.loc[
        (detection["detector"] == "biased")
        & (detection["variant"] == "clean")
        & (detection["unit"] == "frame"),
        "AUC",
    ].iloc[0]
    row = text[text.index("biased") : text.index("fair ")]
    assert f"{auc:.4g}" in row  # the clean AUC sits on the detector's own row


def test_exposure_section_tables_and_verdict(page):
    text = section(page, "exposure")
    assert "Dataset synthetic: 24 identities with 4 images each" in text
    assert "distance 3" in text and "k = 5" in text
    for marker in (
        "hit_ratio@5",
        "disparate_visibility",
        "disparate_exposure",
        "exposure_tone4",
        "visibility of tone1",
        "exposure of tone4",
        "false_positive",
        "identification",
        "facenet",
    ):
        assert marker in text, marker
    assert "visibility" in text and "log2(position + 1)" in text  # the caption explains
    # one p < 0.05 pair per encoder x setting x convention: 8 of 48
    assert "8 of 48 tests differ at p < 0.05 after Holm's adjustment" in text
    # Fig. 2: the exposure pooled over the encoders, most significant pair first
    averaged = text[text.index("Exposure averaged across encoders (Exposure Fig. 2)") :]
    assert "Kolmogorov–Smirnov test compares the two pooled distributions" in averaged
    first = averaged.index("reidentification all near 2 tone2 tone4")
    assert first < averaged.index("reidentification all near 2 tone1 tone2")
    assert "exposure averaged across encoders" in page
    verdict = section(page, "verdict")
    assert (
        "Face ranking at distance 3, dlib_resnet: the group most exposed as a wrong "
        "suspect (largest false-positive exposure) is tone2 in reidentification "
        "(exposure 0.4; next tone1 0.3), tone4 in identification (exposure 0.3; "
        "next tone1 0.25)."
    ) in verdict
    assert (
        "facenet: the group most exposed as a wrong suspect (largest false-positive "
        "exposure) is tone4 in reidentification" in verdict
    )
    assert "tone1 in identification (exposure 0.4" in verdict


def test_forgery_success_and_face_detection_rates(page):
    text = section(page, "forgeries")
    assert (
        "synthetic faceswap 1.000 (4/4) 1.000 (4/4) 0.750 (3/4) 0.500 (2/4) 0.812 (13/16)" in text
    )
    assert "face not usable: no face detected: 2; target has no face: 1" in text
    assert "forgery examples of synthetic" in page
    # The quality card: tone4's fakes change less, the other groups are equal.
    assert "Forgery quality per group" in text
    assert "synthetic faceswap classical equal equal equal differs: change_energy" in text
    assert "forgery quality of faceswap" in page
    failures = section(page, "failures")
    assert "Face detection rate per group" in failures
    assert (
        "synthetic 1.000 (20/20) 0.950 (19/20) 0.900 (18/20) 1.000 (20/20) 0.963 (77/80) "
        "no face detected: 3"
    ) in failures


def test_ranking_disabled_leaves_the_exposure_section_out(page_without_ranking, results, tmp_path):
    assert '<section id="exposure">' not in page_without_ranking
    assert 'href="#exposure"' not in page_without_ranking
    assert "wrong suspect (largest" not in page_without_ranking
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page_without_ranking)
    assert len(images) == 5 + 2  # the run figures, the forgery sheet and quality figure
    for anchor in ("efficiency", "forgeries", "failures"):
        assert f'<section id="{anchor}">' in page_without_ranking
    # with ranking enabled the study's tables are required
    paths = report_inputs(results, ["synthetic"], ["faceswap"])
    paths["exposure_ks"] = tmp_path / "nope.csv"
    with pytest.raises(FileNotFoundError, match="exposure_ks"):
        build_report(paths, CONFIG)


def test_efficiency_figure_is_a_deterministic_png_of_the_data(results, tmp_path):
    efficiency = pd.read_csv(results / "efficiency.csv")
    detection = pd.read_csv(results / "detection_table.csv")
    a = figures.efficiency_figure(efficiency, detection, tmp_path / "a.png")
    b = figures.efficiency_figure(efficiency, detection, tmp_path / "b.png")
    assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert a.read_bytes() == b.read_bytes()
    assert b"Software" not in a.read_bytes()
    moved = detection.assign(AUC=np.where(detection["detector"] == "fair", 0.55, detection["AUC"]))
    c = figures.efficiency_figure(efficiency, moved, tmp_path / "c.png")
    assert c.read_bytes() != a.read_bytes()  # the points are drawn from the AUC
    only_classical = efficiency.loc[efficiency["detector"] == "headpose", ["detector", "note"]]
    d = figures.efficiency_figure(only_classical, detection, tmp_path / "d.png")
    assert d.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_undefined_metrics_get_a_line_in_the_report():
    from fairforge.report.views import detector_columns, undefined_metrics_lines

    fairness = pd.DataFrame(
        {
            "dataset": ["d", "d", "d"],
            "metric": ["AADPD", "AADEO", "pooled_DPD"],
            "det": [0.1, 0.2, 0.3],
            "reason": ["det: computed without the empty cell(s) (real, g3)"] * 2 + [""],
        }
    )
    assert detector_columns(fairness) == ["det"]
    assert undefined_metrics_lines(fairness) == [
        "d: AADPD, AADEO: det: computed without the empty cell(s) (real, g3)."
    ]


def test_paired_comparisons_view_with_one_detector_is_empty(tmp_path):
    from fairforge.report.views import paired_comparisons

    # as read back from a csv of one detector: detector_b is all empty, so float NaN
    one = pd.DataFrame(
        {
            "dataset": ["d"],
            "test": ["chance"],
            "detector": ["det"],
            "detector_b": [np.nan],
            "metric": ["AADPD"],
            "value": [0.1],
            "ci_low": [np.nan],
            "ci_high": [np.nan],
            "p_value": [0.01],
            "p_holm": [0.02],
            "n_perm": [100],
        }
    )
    one.to_csv(tmp_path / "p.csv", index=False)
    assert paired_comparisons(pd.read_csv(tmp_path / "p.csv")).empty


def with_an_untrained_detector(results, work, keep):
    """A copy of ``results`` whose fairness tables hold the ``keep`` detectors and
    "untrained", trained here to a validation AUC of 0.53 and calling every face fake, and
    whose faceswap made fakes for 7 of 20 tone2 images."""
    import shutil

    from fairforge.tables import TrainingRecord

    shutil.copytree(results, work)
    at = report_inputs(work, ["synthetic"], ["faceswap"])
    preds = all_predictions()
    untrained = preds.loc[preds["detector"] == "fair"].assign(detector="untrained")
    rng = np.random.default_rng(0)
    untrained["score"] = rng.uniform(0.51, 1.0, len(untrained)).astype(np.float32)
    preds = pd.concat([preds.loc[preds["detector"].isin(keep)], untrained], ignore_index=True)
    training = {d: TrainingRecord(0.9, True) for d in keep} | {
        "untrained": TrainingRecord(0.53, True)
    }
    failures = pd.read_csv(at["failures"])
    faceswap = (failures["stage"] == "forgery:faceswap") & (failures["group"] == "tone2")
    failures.loc[faceswap, ["n_failed", "failure_rate"]] = [13, 13 / 20]
    failures = failure_rates_table(
        failures.drop(columns=["ci_low", "ci_high", "test", "p_value", "p_holm"])
    )
    failures.to_csv(at["failures"], index=False)
    m = CONFIG["metrics"]
    test = preds.loc[(preds["variant"] == "clean") & (preds["split"] == "test")]
    conventions = Conventions.from_metrics(m)
    out = fairness_outputs(
        test,
        conventions,
        bootstrap=m["bootstrap"],
        training=training,
        failures=failures,
    )
    for name, frame in out.items():
        frame.to_csv(at[FAIRNESS_OUTPUTS[name]], index=False)
    fairness_under_perturbation(preds, conventions).to_csv(
        at["fairness_under_perturbation"], index=False
    )
    pvalue_table(preds, n_perm=200, conventions=conventions).to_csv(at["pvalues"], index=False)
    return build_report(report_inputs(work, ["synthetic"], ["faceswap"]), NO_RANKING)


UNTRAINED = (
    "untrained (not trained enough to judge: validation AUC 0.53, under metrics.min_val_auc "
    "0.7; constant predictions: 100% of real and 100% of fake samples called fake)"
)


def test_an_untrained_detector_is_left_out_of_the_ranking_and_a_short_forgery_named(
    results, tmp_path
):
    page = with_an_untrained_detector(results, tmp_path / "run", ["fair", "fair_sd", "biased"])
    verdict = section(page, "verdict")
    assert f"Left out of the ranking, as they cannot be judged: {UNTRAINED}." in verdict
    # its AADPD is 0, as fair's: ranked, the two would tie
    assert "the fairest detector is fair: 0 [95% CI 0, 0]; next is fair_sd" in verdict
    assert "tie" not in verdict and "untrained p=" not in verdict
    assert (
        "Forgeries made for under 90% of a group's images: faceswap made fakes for 7 of 20 "
        "tone2 images (35%); faceswap made fakes for 17 of 20 tone4 images (85%)."
    ) in verdict  # tone3's 18 of 20 reach the bar
    assert "synthetic: the failure rate of forgery:faceswap depends on group" in verdict
    failures = section(page, "failures")
    assert "failed: tone1 0/20, tone2 13/20, tone3 2/20, tone4 3/20." in failures
    assert "0.650 (13/20) [0.433, 0.819]" in failures  # Wilson 95%
    # the table's test of equal rates per stage, raw and Holm-adjusted, after the groups
    assert "tone4 test of equal rates p Holm p" in failures
    fairness = section(page, "fairness")
    assert "Which detectors can be judged" in fairness and "called_fake_real" in fairness


def test_a_run_whose_only_detector_learned_nothing_ranks_none(results, tmp_path):
    page = with_an_untrained_detector(results, tmp_path / "run", [])
    verdict = section(page, "verdict")
    assert f"No detector can be judged on fairness, so none is ranked: {UNTRAINED}." in verdict
    assert "Only one detector" not in verdict and "AADPD =" not in verdict
    assert "not evidence of fairness" in verdict


def test_the_report_carries_the_protocol_card(page):
    """Every detector's protocol with the source of each value: MesoNet's start is its
    paper's (random weights), the run's lr the config's, DeepfakeBench's frames its recipe's."""
    text = section(page, "protocol")
    for marker in (
        "paper:MesoNet (Afchar et al. 2018): trained from scratch",
        "recipe:deepfakebench",
        "sdaug (p 1)",
        "synthetic",
    ):
        assert marker in text, marker
    assert "Started from random weights" not in text  # MesoNet's paper starts so too
