"""The Assessment's studies on tiny inputs: codecs by bitrate (Fig. 5), augmented twins
(Tables 4-6, Figs. 6-8) and training data against robustness (Fig. 4): their tables, their
figures, when the workflow plans them, and their place in the report."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.cbook import get_sample_data
from skimage.data import astronaut

from fairforge.images import read_image, write_image
from fairforge.perturb import bits_per_pixel
from fairforge.perturb.ops import encode_jpeg
from fairforge.report import build_report, figures, report_inputs
from fairforge.tables import robustness_table
from fairforge.tables.detectors import training_families
from fairforge.tables.robustness import (
    AUGMENTATION_COLUMNS,
    BPP_COLUMNS,
    augmentation_table,
    augmentation_twins,
    compression_bpp,
    compression_rate_table,
)
from fairforge.workflow import augmentation_studies, rate_variants, training_data_families

BASE = {"arch": "xception", "augment": "none", "train_methods": ["Deepfakes"], "lr": 1e-3}


def photographs(folder) -> pd.DataFrame:
    """Two real photographs cut to face-crop size as a samples manifest (paths under
    ``folder``): the astronaut's face and Grace Hopper's."""
    with get_sample_data("grace_hopper.jpg") as f:
        hopper = read_image(f.name)
    crops = {"a": astronaut()[20:220, 150:350], "h": hopper[60:360, 140:440]}
    for name, crop in crops.items():
        write_image(folder / f"{name}.png", np.ascontiguousarray(crop))
    return pd.DataFrame(
        {
            "sample_id": ["h", "a", "x"],
            "dataset": "ffpp_raw",
            "split": ["test", "test", "train"],
            "label": [1, 0, 0],
            "method": ["Deepfakes", "real", "real"],
            "path": ["h.png", "a.png", "missing.png"],
        }
    )


def test_bits_per_pixel_of_each_scored_sample_on_real_photographs(tmp_path):
    samples = photographs(tmp_path)
    table = compression_bpp(samples, tmp_path, "jpeg@30")
    assert list(table.columns) == BPP_COLUMNS
    assert list(table["sample_id"]) == ["a", "h"]  # the test split, by sample id
    for row in table.itertuples():
        image = read_image(tmp_path / f"{row.sample_id}.png")
        expected = 8 * len(encode_jpeg(image, 30)) / (image.shape[0] * image.shape[1])
        assert row.bpp == pytest.approx(expected)
    assert set(table["operation"]) == {"jpeg"} and set(table["level"]) == {30}
    rates = [compression_bpp(samples, tmp_path, f"jpeg@{q}")["bpp"].mean() for q in (95, 60, 30)]
    assert rates[0] > rates[1] > rates[2] > 0.1  # photographs: a real rate at every quality
    with pytest.raises(Exception, match="missing.png"):
        compression_bpp(samples, tmp_path, "jpeg@30", split="train")


def robustness_rows() -> pd.DataFrame:
    rows = []
    aucs = {
        "x": {"clean": 0.95, "jpeg@95": 0.9, "jpeg@30": 0.6, "gaussian_noise@2": 0.55},
        "x_sdaug": {"clean": 0.94, "jpeg@95": 0.93, "jpeg@30": 0.85, "gaussian_noise@2": 0.8},
        "x_daug": {"clean": 0.85, "jpeg@95": 0.84, "jpeg@30": 0.8, "gaussian_noise@2": 0.78},
    }
    aucs["x"]["learned_compression@2"] = 0.52
    aucs["x"]["learned_compression@6"] = 0.7
    for detector, values in aucs.items():
        for dataset in ("ffpp_raw", "celebdf"):
            for variant, auc in values.items():
                shift = 0.1 if dataset == "celebdf" else 0.0
                rows.append(
                    {
                        "dataset": dataset,
                        "detector": detector,
                        "unit": "frame",
                        "variant": variant,
                        "AUC": auc - shift,
                    }
                )
    return robustness_table(pd.DataFrame(rows), categories="assessment")


def test_auc_against_bitrate():
    robustness = robustness_rows()
    bpp = pd.DataFrame(
        {
            "dataset": "ffpp_raw",
            "sample_id": ["a", "b"] * 4,
            "variant": ["jpeg@95"] * 2 + ["jpeg@30"] * 2 + ["learned_compression@2"] * 2
            + ["learned_compression@6"] * 2,
            "operation": ["jpeg"] * 4 + ["learned_compression"] * 4,
            "level": [95, 95, 30, 30, 2, 2, 6, 6],
            "bpp": [3.0, 5.0, 0.5, 0.7, 0.1, 0.3, 0.8, 1.2],
        }
    )  # fmt: skip
    table = compression_rate_table(robustness, bpp)
    assert set(table["dataset"]) == {"ffpp_raw"}  # rates were measured there only
    x = table.loc[table["detector"] == "x"].set_index("variant")
    assert x.loc["jpeg@95", "bpp"] == pytest.approx(4.0)
    assert x.loc["jpeg@95", "bpp_std"] == pytest.approx(np.std([3.0, 5.0], ddof=1))
    assert x.loc["learned_compression@2", "AUC"] == pytest.approx(0.52)
    assert x.loc["learned_compression@2", "clean_AUC"] == pytest.approx(0.95)
    assert x.loc["jpeg@30", "drop"] == pytest.approx(0.35)
    assert (x["n_samples"] == 2).all()
    # per detector and codec, highest rate first
    assert list(x.index) == ["jpeg@95", "jpeg@30", "learned_compression@6", "learned_compression@2"]
    # x_sdaug was not scored under the learned codec: only its JPEG rows
    assert set(table.loc[table["detector"] == "x_sdaug", "operation"]) == {"jpeg"}


def test_each_detector_beside_its_augmented_twins():
    settings = {
        "x": BASE,
        "x_sdaug": {**BASE, "augment": "sdaug"},
        "x_daug": {**BASE, "augment": "daug"},
        "x_augmix": {**BASE, "augment": "augmix"},
        "x_sdaug_lr": {**BASE, "augment": "sdaug", "lr": 5e-4},  # two differences: no twin
        "y": {**BASE, "arch": "capsule"},
    }
    twins = augmentation_twins(settings)
    assert twins == [
        ("x", "x_augmix", "augmix"),
        ("x", "x_daug", "daug"),
        ("x", "x_sdaug", "sdaug"),
    ]
    table = augmentation_table(robustness_rows(), twins)
    assert list(table.columns) == AUGMENTATION_COLUMNS
    assert set(table["twin"]) == {"x_sdaug", "x_daug"}  # x_augmix has no predictions
    sd = table.loc[(table["twin"] == "x_sdaug") & (table["dataset"] == "ffpp_raw")]
    jpeg30 = sd.loc[sd["variant"] == "jpeg@30"].iloc[0]
    assert (jpeg30["baseline"], jpeg30["augmented"]) == pytest.approx((0.6, 0.85))
    assert jpeg30["change"] == pytest.approx(0.25)
    # category means and overall scores over the variants both were scored on: x's learned
    # compression rows, which its twin lacks, are left out of x's side too
    image = sd.loc[(sd["scope"] == "overall") & (sd["category"] == "image")].iloc[0]
    assert image["baseline"] == pytest.approx(np.mean([0.9, 0.6, 0.55]))
    assert image["augmented"] == pytest.approx(np.mean([0.93, 0.85, 0.8]))
    assert image["n_variants"] == 3
    categories = sd.loc[sd["scope"] == "category"].set_index("category")
    assert categories.loc["image/compression", "augmented"] == pytest.approx(0.89)
    assert categories.loc["image/compression", "n_variants"] == 2
    assert set(sd.loc[sd["scope"] == "overall", "category"]) == {"image", "all"}
    assert len(sd.loc[sd["scope"] == "variant"]) == 4  # clean and x_sdaug's three variants
    assert augmentation_table(robustness_rows(), []).empty


def test_the_workflow_plans_each_study_only_where_it_compares_something():
    assert rate_variants(["clean", "jpeg@30", "gaussian_blur@3"]) == []  # no curve
    variants = ["clean", "jpeg@95", "jpeg@30", "jpeg@30~frame", "jpeg@random", "blur+jpeg@2"]
    assert rate_variants(variants + ["learned_compression@3", "hific@1"]) == [
        "jpeg@95",
        "jpeg@30",
        "learned_compression@3",
        "hific@1",
    ]
    config = {
        "seed": 0,
        "device": "cpu",
        "datasets": {"raw": {}, "c23": {}, "celebdf": {}},
        "training": {"num_workers": 0, "recipe": "assessment", "train_methods": ["Deepfakes"]},
        "detectors": {
            "x_raw": {"arch": "xception"},
            "x_c23": {"arch": "xception", "train_dataset": "c23"},
            "x_full": {"arch": "xception", "train_dataset": ["raw", "c23"]},
            "x_raw_sdaug": {"arch": "xception", "augment": "sdaug"},
            "x_celebdf": {"arch": "xception", "train_dataset": "celebdf",
                          "train_methods": ["Celeb-synthesis"]},
            "vendor": {"scores": "/x/scores.csv"},
        },
    }  # fmt: skip
    assert augmentation_studies(config) == [("x_raw", "x_raw_sdaug", "sdaug")]
    # ordered by training set: c23, raw, raw+c23
    assert training_data_families(config) == [["x_c23", "x_raw", "x_full"]]


def test_figures_are_deterministic_pngs(tmp_path):
    robustness = robustness_rows()
    bpp = pd.DataFrame(
        {
            "dataset": "ffpp_raw",
            "sample_id": "a",
            "variant": ["jpeg@95", "jpeg@30", "learned_compression@2", "learned_compression@6"],
            "operation": ["jpeg", "jpeg", "learned_compression", "learned_compression"],
            "level": [95, 30, 2, 6],
            "bpp": [4.0, 0.6, 0.2, 1.0],
        }
    )
    twins = [("x", "x_daug", "daug"), ("x", "x_sdaug", "sdaug")]
    aug = augmentation_table(robustness, twins)
    cross = pd.DataFrame(
        {
            "dataset": "ffpp_raw",
            "detector": ["x", "x_sdaug"],
            "trained_on": ["Deepfakes", "Deepfakes"],
            "Deepfakes": [0.99, 0.98],
            "Face2Face": [0.6, 0.7],
            "average": [0.795, 0.84],
        }
    )
    drawings = {
        "rate": lambda p: figures.compression_rate_figure(
            compression_rate_table(robustness, bpp), p
        ),
        "augmentation": lambda p: figures.augmentation_figure(aug, p),
        "cross": lambda p: figures.cross_manipulation_figure(cross, [("x", "x_sdaug")], p),
        "families": lambda p: figures.training_data_figure(robustness, [["x", "x_daug"]], p),
    }
    for name, draw in drawings.items():
        a, b = draw(tmp_path / f"{name}_a.png"), draw(tmp_path / f"{name}_b.png")
        assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert a.read_bytes() == b.read_bytes(), name
    # nothing to compare: a figure that says so
    empty = figures.cross_manipulation_figure(cross, [], tmp_path / "none.png")
    assert empty.stat().st_size < drawings["cross"](tmp_path / "c.png").stat().st_size
    # families of one member compare nothing
    alone = figures.training_data_figure(robustness, [["x"]], tmp_path / "alone.png")
    assert alone.is_file()
    assert training_families({"x": BASE, "y": {**BASE, "train_dataset": "c23"}}) == [["x", "y"]]


def test_the_report_shows_a_study_only_when_the_run_made_it(tmp_path):
    """The studies' parts of the robustness section: present with their files, absent
    without (report_paths(studies=...) names the files)."""
    results = tmp_path / "results"
    plain = report_inputs(results, ["ffpp_raw"], [])
    full = {**plain, **report_inputs(results, ["ffpp_raw"], [], studies=["augmentation"])}
    assert set(full) - set(plain) == {"augmentation", "augmentation_figure",
                                      "cross_manipulation_figure"}  # fmt: skip
    robustness = robustness_rows()
    aug = augmentation_table(robustness, [("x", "x_sdaug", "sdaug")])
    full["augmentation"].parent.mkdir(parents=True, exist_ok=True)
    aug.to_csv(full["augmentation"], index=False)
    figures.augmentation_figure(aug, full["augmentation_figure"])
    from fairforge.report.html import _study_parts

    shown = "".join(_study_parts(full))
    assert "Augmented twins (Assessment Tables 4-6" in shown
    assert len(re.findall(r"data:image/png;base64", shown)) == 1  # the cross figure is missing
    assert "cross_manipulation.png missing" in shown
    assert "image/compression" in shown and "x_sdaug" in shown
    assert _study_parts(plain) == []
    assert callable(build_report) and bits_per_pixel  # the report module's public names
