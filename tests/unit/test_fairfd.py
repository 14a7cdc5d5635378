"""FairFD as the paper runs it (configs/fairfd.yaml): its recipe and augmentation (§5.1), the
ImageNet starts of its nine detectors, Table 4's training set balanced by subjects per race
(§5.3.1), Table 5's thresholds fitted on the evaluated set (§5.3.2), and A.6 / A.7's
per-subject rates, penultimate features, t-SNE and MMD (Figs. 5-7)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import timm
import torch
import torchvision
import yaml
from skimage import data as skdata

from fairforge.balance import BalanceError, balance_subjects
from fairforge.config import ConfigError, validate_config
from fairforge.detectors import create_detector
from fairforge.detectors.base import Detector
from fairforge.detectors.pretrained import apply_pretrained
from fairforge.features import feature_sample, network_features
from fairforge.images import read_image, write_image
from fairforge.metrics.mmd import median_bandwidth, mmd2, mmd_test
from fairforge.metrics.subjects import subject_rates
from fairforge.perturb.augment import DeepfakeBenchAug, create_augment
from fairforge.recipes import recipe_settings
from fairforge.report import build_report, figures, report_inputs
from fairforge.seeding import rng_for
from fairforge.tables import balanced_twins, detectors_frame, thresholds_table
from fairforge.tables.fairness import thresholds_from_files
from fairforge.tables.features import (
    feature_mmd_table,
    subject_rates_summary,
    subject_rates_table,
    tsne_coordinates,
)
from fairforge.training.detector import TrainConfig, save_checkpoint, training_sets
from fairforge.workflow import detector_settings, feature_jobs, select_config
from report_results import CONFIG as REPORT_CONFIG
from report_results import fairfd_xception_predictions

ROOT = Path(__file__).resolve().parents[2]
RACES = ("Caucasian", "Asian", "African", "Indian")


@pytest.fixture(scope="module")
def fairfd() -> dict:
    return validate_config(yaml.safe_load((ROOT / "configs" / "fairfd.yaml").read_text()))


# ----------------------------------------------------------------- §5.1: recipe, detectors


def test_the_fairfd_recipe_is_section_5_1(fairfd):
    recipe = recipe_settings("fairfd")
    assert (recipe["optimizer"], recipe["lr"], recipe["epochs"], recipe["batch_size"]) == (
        "adam",
        2e-4,
        10,
        32,
    )
    assert (recipe["input_size"], recipe["frames_train"], recipe["augment"]) == (256, 32, "fairfd")
    assert recipe["weight_decay"] == 5e-4 and not recipe["sam"]  # DeepfakeBench's (unstated)
    # the nine detectors of §5.1, spatial and frequency, under it; Table 4's twins at 20 epochs
    nine = {"xception", "recce", "ucf", "capsule", "ffd", "core", "f3net", "spsl", "srm"}
    standard = {d for d, b in fairfd["detectors"].items() if not b.get("balanced")}
    assert standard == nine
    for name in fairfd["detectors"]:
        settings = detector_settings(fairfd, name)
        assert settings["recipe"] == "fairfd" and settings["lr"] == 2e-4
        assert settings["epochs"] == (20 if settings["balanced"] else 10)
        assert settings["train_methods"] == ["Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures"]


def test_fairfd_augmentation_is_compression_flip_and_rotation_only():
    """DeepfakeBench's flip, rotation and JPEG, each at its probability; never its blur or
    brightness/contrast. On a real photograph, a plan does what DeepfakeBench's does."""
    aug, dfb = create_augment("fairfd"), DeepfakeBenchAug()
    plans = [aug.plan(rng_for("plan", i)) for i in range(400)]
    assert all(p.blur_kernel is None and p.brightness is None for p in plans)
    for fired in (
        [p.flip for p in plans],
        [p.angle is not None for p in plans],
        [p.jpeg_quality is not None for p in plans],
    ):
        assert 0.4 < np.mean(fired) < 0.6
    assert all(-10 <= p.angle <= 10 for p in plans if p.angle is not None)
    assert all(40 <= p.jpeg_quality <= 100 for p in plans if p.jpeg_quality is not None)
    photo = np.ascontiguousarray(skdata.astronaut()[:256, 128:384])
    for plan in plans[:6]:
        np.testing.assert_array_equal(aug.apply(photo, plan), dfb.apply(photo, plan))
    plain = next(p for p in plans if not p.flip and p.angle is None and p.jpeg_quality is None)
    np.testing.assert_array_equal(aug.apply(photo, plain), photo)


def _imagenet_file(name: str, folder: Path) -> Path:
    """A random-weight file in the layout of the ImageNet file ``name``."""
    path = folder / name
    if not path.exists():
        if name.startswith("xception"):
            net = timm.create_model("legacy_xception", pretrained=False, num_classes=1000)
            torch.save(net.state_dict(), path)
        else:
            vgg = torchvision.models.vgg19(weights=None).features[:19]
            torch.save({f"features.{k}": v for k, v in vgg.state_dict().items()}, path)
    return path


def test_every_fairfd_detector_starts_from_its_imagenet_file(fairfd, tmp_path):
    """Each of the nine takes the file its config names (SRM into both of its streams)."""
    seen = set()
    for name, block in fairfd["detectors"].items():
        arch, file = block["arch"], Path(block["pretrained"]).name
        if (arch, file) in seen:
            continue
        seen.add((arch, file))
        model = create_detector(arch, input_size=64)
        assert apply_pretrained(model, arch, _imagenet_file(file, tmp_path)) > 10, name
    assert {a for a, _ in seen} == {b["arch"] for b in fairfd["detectors"].values()}
    srm = create_detector("srm", input_size=64)
    apply_pretrained(srm, "srm", tmp_path / "xception-b5690688.pth")
    conv1 = torch.load(tmp_path / "xception-b5690688.pth", weights_only=True)["conv1.weight"]
    assert torch.equal(srm.backbone_rgb.conv1.weight, conv1)
    assert torch.equal(srm.backbone_srm.conv1.weight, conv1)


# ----------------------------------------------------------------- Table 4: balanced


def training_samples() -> pd.DataFrame:
    """Train and val rows of FF++-like videos: subjects per race 5, 4, 3, 3 and 2 'Others';
    each subject's real video and one fake, two frames each."""
    counts = {"Caucasian": 5, "Asian": 4, "African": 3, "Indian": 3, "Others": 2}
    rows = []
    for race, n in counts.items():
        for s in range(n):
            subject = f"{race[:2]}{s}"
            for method, label in (("real", 0), ("Deepfakes", 1)):
                for f in range(2):
                    for split in ("train", "val"):
                        rows.append(
                            {
                                "sample_id": f"{split}_{method}_{subject}_{f}",
                                "dataset": "ffpp",
                                "split": split,
                                "label": label,
                                "method": method,
                                "group": race,
                                "subject_id": subject,
                                "path": f"{subject}/{f}.png",
                            }
                        )
    return pd.DataFrame(rows)


def test_balanced_training_keeps_subjects_per_race_with_all_their_frames():
    samples = training_samples()
    train = samples.loc[samples["split"] == "train"]
    kept = balance_subjects(train, 3, list(RACES), seed=7)
    per_race = kept.groupby("group")["subject_id"].nunique().to_dict()
    assert per_race == dict.fromkeys(RACES, 3)  # 'Others' left out
    # every row of a kept subject: both frames of its real and fake videos
    assert (kept.groupby("subject_id").size() == 4).all()
    # the same draw whatever the row order, another for another seed
    shuffled = balance_subjects(train.sample(frac=1, random_state=1), 3, list(RACES), seed=7)
    assert set(shuffled["sample_id"]) == set(kept["sample_id"])
    draws = {
        frozenset(balance_subjects(train, 3, list(RACES), seed=s)["subject_id"]) for s in range(8)
    }
    assert len(draws) > 1
    with pytest.raises(BalanceError, match=r"\{'African': 3, 'Indian': 3\}"):
        balance_subjects(train, 4, list(RACES))
    # the training protocol reads the detector's balanced block; validation stays whole
    cfg = TrainConfig(
        arch="xception",
        train_methods=["Deepfakes"],
        balanced={"subjects": 2, "groups": ["Asian", "Indian"]},
    )
    fit, val = training_sets(samples, cfg)
    assert set(fit["group"]) == {"Asian", "Indian"} and fit["subject_id"].nunique() == 4
    assert len(val) == (samples["split"] == "val").sum()


def test_table_4_pairs_each_detector_with_its_balanced_twin(fairfd):
    settings = {d: detector_settings(fairfd, d) for d in fairfd["detectors"]}
    pairs = balanced_twins(settings)
    assert pairs == [
        ("f3net", "f3net_balanced"),
        ("recce", "recce_balanced"),
        ("ucf", "ucf_balanced"),
        ("xception", "xception_balanced"),
    ]
    shown = detectors_frame(settings).set_index("detector")
    assert shown.loc["xception_balanced", "balanced"] == (
        "26 subjects per group of Caucasian, Asian, African, Indian"
    )
    assert shown.loc["xception_balanced", "balanced_twin_of"] == "xception"
    with pytest.raises(ConfigError, match=r"detectors\.x\.balanced"):
        validate_config({"detectors": {"x": {"arch": "xception", "balanced": {"groups": ["a"]}}}})


# ----------------------------------------------------------------- Table 5: thresholds


def test_table_5_fits_each_race_on_the_evaluated_set_of_a_test_only_dataset(fairfd, tmp_path):
    preds, ref = fairfd_xception_predictions(splits=("test",))
    preds["dataset"] = "rfw"
    path = tmp_path / "clean.parquet"
    preds.to_parquet(path)
    table = thresholds_from_files([path], fairfd["metrics"], ["val", "test"]).set_index("metric")
    assert set(table["fitted_on"]) == {"test (the evaluated set)"}
    # Table 5(a) at 0.5: the Real and FaceSwap rows of Table 1, with their STD and AccGap
    for r, row in enumerate(ref["rows"][:2]):
        method = "real" if row == "Real" else row.lower()
        for g, group in enumerate(ref["groups"]):
            assert table.loc[f"accuracy[{method}][{group}]", "global"] == pytest.approx(
                ref["accuracy"][r][g], abs=1e-3
            )
        assert table.loc[f"STD[{method}]", "global"] == pytest.approx(
            ref["table1_std"][r], abs=2e-4
        )
        assert table.loc[f"AccGap[{method}]", "global"] == pytest.approx(
            ref["table1_accgap"][r], abs=2e-4
        )
    assert "accuracy[simswap][Asian]" not in table.index  # real and FaceSwap only
    # fitted on validation, a test-only dataset keeps its global column and says why
    val = thresholds_table(preds, approaches=["real", "faceswap"]).set_index("metric")
    assert val["per_group"].isna().all() and val["global"].notna().all()
    assert val["fitted_on"].iloc[0].startswith("not fitted: no 'val' predictions on rfw")


def test_each_races_threshold_maximises_its_accuracy_on_the_evaluated_set():
    """§5.3.2's Fig. 4: one race scores everything higher, another lower; each race's
    threshold then moves with it, and the gaps shrink."""
    rng = np.random.default_rng(3)
    centres = {"Caucasian": (0.35, 0.65), "Asian": (0.55, 0.85), "African": (0.15, 0.45)}
    parts = []
    for group, (real, fake) in centres.items():
        for method, label, centre in (("real", 0, real), ("faceswap", 1, fake)):
            n = 300
            parts.append(
                pd.DataFrame(
                    {
                        "sample_id": [f"{group}{method}{i}" for i in range(n)],
                        "label": label,
                        "method": method,
                        "group": group,
                        "subject_id": [f"{group}{i % 30}" for i in range(n)],
                        "score": np.clip(rng.normal(centre, 0.08, n), 0, 1),
                        "split": "test",
                        "detector": "xception",
                        "dataset": "rfw",
                    }
                )
            )
    table = thresholds_table(
        pd.concat(parts, ignore_index=True), fit_split="test", approaches=["real", "faceswap"]
    ).set_index("metric")
    fitted = {g: table.loc[f"threshold[{g}]", "per_group"] for g in centres}
    assert (
        fitted["Asian"] > 0.6 and fitted["African"] < 0.4 and abs(fitted["Caucasian"] - 0.5) < 0.1
    )
    for group in centres:
        at = {m: table.loc[f"accuracy[{m}][{group}]"] for m in ("real", "faceswap")}
        assert at["real"]["per_group"] + at["faceswap"]["per_group"] >= (
            at["real"]["global"] + at["faceswap"]["global"]
        )
    assert table.loc["AADPD", "per_group"] < table.loc["AADPD", "global"]
    assert set(table["fitted_on"]) == {"test (the evaluated set)"}


# ----------------------------------------------------------------- A.6: per-subject rates


def test_subject_rates_count_each_subjects_real_and_fake_samples():
    label = [0, 0, 1, 1, 1, 0, 1]
    score = [0.2, 0.7, 0.9, 0.4, 0.6, 0.1, 0.5]
    subject = ["a", "a", "a", "a", "b", "c", "c"]
    group = ["x", "x", "x", "x", "x", "y", "y"]
    rates = subject_rates(label, score, subject, group, 0.5, ">=").set_index("subject_id")
    assert rates.loc["a", ["n_real", "n_fake"]].tolist() == [2, 2]
    assert rates.loc["a", "TNR"] == 0.5 and rates.loc["a", "TPR"] == 0.5
    assert np.isnan(rates.loc["b", "TNR"]) and rates.loc["b", "TPR"] == 1.0
    assert rates.loc["c", "TPR"] == 1.0  # 0.5 >= 0.5 with FairFD's rule
    assert (
        subject_rates(label, score, subject, group, 0.5, ">")
        .set_index("subject_id")
        .loc["c", "TPR"]
        == 0.0
    )
    preds = pd.DataFrame(
        {
            "label": label,
            "score": score,
            "subject_id": subject,
            "group": group,
            "dataset": "d",
            "detector": "m",
            "variant": "clean",
            "split": ["test"] * 6 + ["val"],
        }
    )
    table = subject_rates_table(preds, split="test")
    assert set(table["subject_id"]) == {"a", "b", "c"} and table.loc[2, "n_fake"] == 0
    summary = subject_rates_summary(table).set_index("group")
    assert summary.loc["x", "TPR subjects"] == 2 and summary.loc["x", "TPR mean"] == 0.75


# ----------------------------------------------------------------- A.7: features, MMD


def test_mmd_is_the_unbiased_rbf_estimate_with_the_median_heuristic():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(4, 3)) + 0.5
    pooled = np.vstack([x, y])
    distances = [np.linalg.norm(a - b) for i, a in enumerate(pooled) for b in pooled[i + 1 :]]
    sigma = np.median(distances)
    assert median_bandwidth(x, y) == pytest.approx(sigma)

    def k(a, b):
        return np.exp(-np.sum((a - b) ** 2) / (2 * sigma**2))

    kxx = sum(k(a, b) for i, a in enumerate(x) for j, b in enumerate(x) if i != j) / 20
    kyy = sum(k(a, b) for i, a in enumerate(y) for j, b in enumerate(y) if i != j) / 12
    kxy = sum(k(a, b) for a in x for b in y) / 20
    assert mmd2(x, y) == pytest.approx(kxx + kyy - 2 * kxy)
    same = mmd_test(rng.normal(size=(60, 4)), rng.normal(size=(60, 4)), 100, seed=1)
    apart = mmd_test(rng.normal(size=(60, 4)), rng.normal(size=(60, 4)) + 1.0, 100, seed=1)
    assert abs(same.mmd2) < 0.05 and same.p_value > 0.05
    assert apart.mmd2 > 0.2 and apart.p_value < 0.02
    assert mmd_test(x, y, 50, seed=3) == mmd_test(x, y, 50, seed=3)
    with pytest.raises(ValueError, match="at least 2 points"):
        mmd2(x[:1], y)


def test_penultimate_features_are_the_input_of_the_final_layer():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        xception = create_detector("xception", input_size=64).eval()
        feats = xception.penultimate(x)
        assert feats.shape == (2, 2048)
        torch.testing.assert_close(xception.backbone.fc(feats).squeeze(1), xception(x))
        capsule = create_detector("capsule", input_size=64).eval()
        primary = capsule.penultimate(x)
        assert primary.shape == (2, 80)
        votes = capsule.routing(primary.reshape(2, 10, 8))
        assert torch.allclose(torch.sigmoid(votes[:, 1] - votes[:, 0]).mean(1).logit(), capsule(x))

    class NoLinear(Detector):
        def forward(self, x):
            return x.mean((1, 2, 3))

    with pytest.raises(NotImplementedError, match="override"):
        NoLinear().penultimate(x)


def photo_samples(root: Path) -> pd.DataFrame:
    """Crops of real photographs as a samples manifest: two races x real and FaceSwap, three
    subjects each, the astronaut and Grace Hopper alternating."""
    from matplotlib import cbook

    photos = [
        skdata.astronaut(),
        read_image(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)),
    ]
    rows = []
    for g, group in enumerate(("Caucasian", "Asian")):
        for method, label in (("real", 0), ("faceswap", 1)):
            for s in range(3):
                rel = f"crops/{group}_{method}_{s}.png"
                image = photos[(g + s) % 2][:256, :256]
                write_image(
                    root / rel, image if label == 0 else np.ascontiguousarray(image[:, ::-1])
                )
                rows.append(
                    {
                        "sample_id": f"{group}_{method}_{s}",
                        "dataset": "rfw",
                        "split": "test",
                        "label": label,
                        "method": method,
                        "group": group,
                        "subject_id": f"{group}{s}",
                        "path": rel,
                    }
                )
    return pd.DataFrame(rows)


def test_features_of_a_checkpoint_on_a_seeded_sample_of_real_photographs(tmp_path):
    samples = photo_samples(tmp_path)
    drawn = feature_sample(samples, ["real", "faceswap"], per_group=2, seed=7)
    assert drawn.groupby(["method", "group"]).size().tolist() == [2, 2, 2, 2]
    again = feature_sample(samples.sample(frac=1, random_state=3), ["real", "faceswap"], 2, seed=7)
    pd.testing.assert_frame_equal(drawn, again)
    assert feature_sample(samples, ["fastreen"], 2).empty
    torch.manual_seed(0)
    net = create_detector("xception", input_size=64)
    cfg = TrainConfig(arch="xception")
    save_checkpoint(tmp_path / "m.pt", net, cfg, {"input_size": 64}, 64, 0, 0.5)
    features = network_features(tmp_path / "m.pt", drawn, tmp_path, "xception", batch_size=3)
    assert list(features["sample_id"]) == list(drawn["sample_id"])
    assert {len(v) for v in features["feature"]} == {2048}
    # the same image gives the same features, whatever batch it falls in
    single = network_features(tmp_path / "m.pt", drawn.iloc[[4]], tmp_path, "xception")
    np.testing.assert_allclose(single["feature"][0], features["feature"][4], rtol=1e-4, atol=1e-5)


def synthetic_features(shift: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    rows = []
    for method in ("real", "faceswap"):
        for g, group in enumerate(RACES):
            centre = np.zeros(8) + (shift * g if method == "faceswap" else 0.0)
            for i in range(12):
                rows.append(
                    {
                        "sample_id": f"{method}{group}{i}",
                        "dataset": "rfw",
                        "split": "test",
                        "label": int(method != "real"),
                        "method": method,
                        "group": group,
                        "subject_id": f"{group}{i % 4}",
                        "detector": "xception",
                        "feature": (centre + rng.normal(size=8)).astype(np.float32),
                    }
                )
    return pd.DataFrame(rows)


def test_feature_tables_measure_each_race_against_the_reference(tmp_path):
    features = synthetic_features(shift=3.0)
    mmd = feature_mmd_table(features, "Caucasian", permutations=50, seed=7)
    assert set(mmd["group"]) == {"Asian", "African", "Indian"} and len(mmd) == 6
    real = mmd.loc[mmd["method"] == "real"].set_index("group")["mmd2"]
    swapped = mmd.loc[mmd["method"] == "faceswap"].set_index("group")["mmd2"]
    assert (real.abs() < 0.15).all() and (swapped > 0.3).all()
    assert swapped["Indian"] > swapped["Asian"]  # further from the reference
    short = feature_mmd_table(features.loc[~features["sample_id"].str.startswith("realAsian1")])
    assert short.loc[short["group"] == "Asian", "reason"].eq("").all()  # ten remain
    tiny = features.groupby(["method", "group"]).head(1)
    assert feature_mmd_table(tiny, "Caucasian")["reason"].str.startswith("fewer than 2").all()
    coords = tsne_coordinates(features, perplexity=30, seed=7)
    assert len(coords) == len(features) and {"x", "y"} <= set(coords.columns)
    pd.testing.assert_frame_equal(coords, tsne_coordinates(features, perplexity=30, seed=7))
    for draw, table in (
        (figures.feature_tsne_figure, coords),
        (figures.feature_mmd_figure, mmd),
    ):
        path = draw(table, tmp_path / f"{draw.__name__}.png")
        assert path.stat().st_size > 1000


def test_the_report_shows_the_subject_and_feature_analyses(results, tmp_path):  # noqa: F811
    paths = report_inputs(results, ["synthetic"], ["faceswap"], subjects=True, features=True)
    preds = pd.concat(
        [
            pd.DataFrame(
                {
                    "label": [0, 1, 0, 1],
                    "score": [0.2, 0.8, 0.6, 0.3],
                    "subject_id": ["s1", "s1", "s2", "s2"],
                    "group": ["tone1", "tone1", "tone2", "tone2"],
                    "dataset": "synthetic",
                    "detector": "fair",
                    "split": "test",
                }
            )
        ]
    )
    rates = subject_rates_table(preds)
    rates.to_csv(paths["subject_rates"], index=False)
    figures.subject_rates_figure(rates, paths["subject_rates_figure"])
    mmd = feature_mmd_table(synthetic_features(1.0), "Caucasian", permutations=20)
    mmd.to_csv(paths["feature_mmd"], index=False)
    figures.feature_tsne_figure(
        tsne_coordinates(synthetic_features()), paths["feature_tsne_figure"]
    )
    figures.feature_mmd_figure(mmd, paths["feature_mmd_figure"])
    page = build_report(paths, REPORT_CONFIG)
    start = page.index('<section id="subjects">')
    part = page[start : page.index("</section>", start)]
    assert part.count("data:image/png;base64") == 3
    assert "FairFD Fig. 5" in part and "Figs. 6 and 7" in part and "TPR mean" in part
    assert 'href="#subjects"' in page
    # a run without them has no such section
    plain = build_report(report_inputs(results, ["synthetic"], ["faceswap"]), REPORT_CONFIG)
    assert '<section id="subjects">' not in plain and 'href="#subjects"' not in plain


# ----------------------------------------------------------------- the config's analyses


def test_features_follow_the_config_and_select(fairfd):
    assert feature_jobs(fairfd) == [("xception", "rfw")]
    laptop = validate_config(
        yaml.safe_load((ROOT / "configs" / "fairfd.yaml").read_text())
        | {"select": {"detectors": ["f3net"]}}
    )
    assert feature_jobs(select_config(laptop)) == []  # Xception's analysis goes with it
    bad = yaml.safe_load((ROOT / "configs" / "fairfd.yaml").read_text())
    bad["metrics"]["features"]["detectors"] = ["nope"]
    with pytest.raises(ConfigError, match=r"metrics\.features\.detectors: unknown detector 'nope'"):
        validate_config(bad)
    bad["metrics"]["features"]["detectors"] = ["x"]
    bad["detectors"]["x"] = {"arch": "headpose"}
    with pytest.raises(ConfigError, match="not a network detector"):
        validate_config(bad)


def test_the_commented_official_backends_name_their_options():
    """The file's commented `official` example, uncommented, is refused only for its
    missing release files: every option it names is one the backend takes."""
    import re

    text = (ROOT / "configs" / "fairfd.yaml").read_text()
    block = text[text.index("  # backends: {simswap") : text.index("  methods: [faceswap")]
    example = yaml.safe_load("\n".join(re.sub(r"^  # ?", "", line) for line in block.splitlines()))
    assert set(example["backends"]) == {"simswap", "fastreen", "dualreen", "maskgan"}
    for method in example["backends"]:
        config = yaml.safe_load(text)
        config["forgery"]["backends"] = {method: "official"}
        config["forgery"]["options"] = {method: example["options"][method]}
        with pytest.raises(ConfigError, match=rf"{method} backend 'official': \w+_path expected"):
            validate_config(config)
