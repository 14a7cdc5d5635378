"""The detector zoo: auxiliary losses use what they claim, frequency and residual front ends,
the head-pose detector, DeepfakeBench checkpoints and external score files."""

import cv2
import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from fairforge.columns import PREDICTION_COLUMNS
from fairforge.detectors import DETECTORS, create_detector, detector_entry, list_detectors
from fairforge.detectors.capsule import squash
from fairforge.detectors.core import crop_flip_view
from fairforge.detectors.deepfakebench import CheckpointMismatch, load_deepfakebench
from fairforge.detectors.external import ScoreFileError, external_predictions
from fairforge.detectors.f3net import band_mask, dct_matrix
from fairforge.detectors.headpose import (
    CENTRAL_FACE,
    HeadPoseSVM,
    camera_matrix,
    generic_face_3d,
    headpose_predictions,
    pose_difference_features,
)
from fairforge.detectors.spsl import phase_image
from fairforge.detectors.srm import SRMFilter
from fairforge.metrics.detection import auc
from fairforge.registry import UnknownName
from fairforge.seeding import rng_for

SMALL = 64
TINY = 32  # the smallest input Xception-based models take (its exit flow reaches 1×1)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # Tiny inputs gain nothing from threads, and on a busy machine thread handoffs dominate.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


def _images(n, size=SMALL, seed=0):
    return torch.from_numpy(rng_for("zoo", seed).normal(0, 0.5, (n, 3, size, size))).float()


# --- registry --------------------------------------------------------------------------------


def test_the_zoo_is_registered_on_one_registry_by_kind():
    expected = {
        "xception",
        "meso4",
        "meso4inception",
        "capsule",
        "ffd",
        "recce",
        "ucf",
        "core",
        "efficientnet_b4",
        "patch_resnet",
        "patch_xception",
        "f3net",
        "srm",
        "spsl",
    }
    assert expected <= set(list_detectors(kind="network"))
    assert list_detectors(kind="classical") == ["headpose"]
    assert list_detectors(kind="external") == ["external"]
    assert set(list_detectors()) == set(DETECTORS.names())
    assert isinstance(create_detector("headpose", image_size=128), HeadPoseSVM)
    with pytest.raises(UnknownName, match="headpose"):
        create_detector("nope")
    assert detector_entry("ffd").needs_masks
    assert not detector_entry("xception").needs_masks


# --- auxiliary losses ------------------------------------------------------------------------


@torch.no_grad()
def test_ffd_map_loss_follows_the_mask():
    model = create_detector("ffd", input_size=TINY, map_weight=1.0).eval()
    x, labels = _images(2, TINY), torch.tensor([0, 1])

    def loss_with(mask):
        logits = model(x)
        attention = model._outputs["attention"]
        return model.loss(logits, labels, {"mask": mask}), logits, attention

    ones, logits, attention = loss_with(torch.ones(2, 1, TINY, TINY))
    zeros, _, _ = loss_with(torch.zeros(2, 1, TINY, TINY))
    # L1(a, 1) − L1(a, 0) = 1 − 2·mean(a), exactly
    assert float(ones - zeros) == pytest.approx(1 - 2 * float(attention.mean()), abs=1e-5)
    half = torch.zeros(2, 1, TINY, TINY)
    half[..., : TINY // 2] = 1.0
    mixed, _, _ = loss_with(half)
    assert float(mixed) not in (pytest.approx(float(ones)), pytest.approx(float(zeros)))
    bce = F.binary_cross_entropy_with_logits(logits, labels.float())
    # without masks: the weak supervision (real maps → 0, max of fake maps → 1)
    weak = model.loss(model(x), labels, {})
    expected = 0.5 * (attention[0].mean() + (1 - attention[1].amax()).abs())
    assert float(weak) == pytest.approx(float(bce + expected), abs=1e-5)


@torch.no_grad()
def test_recce_reconstruction_loss_uses_real_images_only():
    model = create_detector("recce", input_size=TINY, recon_weight=0.5).eval()
    x = _images(3, TINY)
    fake = torch.ones(3, dtype=torch.long)
    logits = model(x)
    recon = model._outputs["recon"]
    assert recon.shape == x.shape
    assert float(model.loss(logits, fake)) == pytest.approx(
        float(F.binary_cross_entropy_with_logits(logits, fake.float())), abs=1e-6
    )
    real = torch.tensor([0, 1, 1])
    logits = model(x)
    expected = (
        F.binary_cross_entropy_with_logits(logits, real.float())
        + 0.5 * (recon[0] - x[0]).abs().mean()
    )
    assert float(model.loss(logits, real)) == pytest.approx(float(expected), abs=1e-5)


def test_ucf_trains_the_content_encoder_through_reconstruction():
    model = create_detector("ucf", input_size=TINY).train()
    x, labels = _images(2, TINY), torch.tensor([0, 1])
    logits = model(x)
    loss = model.loss(logits, labels)
    bce = F.binary_cross_entropy_with_logits(logits, labels.float())
    assert float(loss.detach()) > float(bce.detach())
    loss.backward()
    content_grad = sum(
        float(p.grad.abs().sum()) for p in model.encoder_c.parameters() if p.grad is not None
    )
    assert content_grad > 0
    model.eval()
    with torch.no_grad():
        logits = model(x)
        assert float(model.loss(logits, labels)) == pytest.approx(
            float(F.binary_cross_entropy_with_logits(logits, labels.float())), abs=1e-6
        )


def test_core_adds_a_seeded_consistency_term_in_training():
    x, labels = _images(2, TINY), torch.tensor([0, 1])
    torch.manual_seed(1)
    a = create_detector("core", input_size=TINY).train()
    torch.manual_seed(1)
    b = create_detector("core", input_size=TINY).train()
    la, lb = a.loss(a(x), labels).detach(), b.loss(b(x), labels).detach()
    assert float(la) == pytest.approx(float(lb), abs=1e-6)  # same seed and step → same views
    c = create_detector("core", input_size=TINY, consistency_weight=0.0)
    c.load_state_dict(a.state_dict())
    c.train()
    a.steps = c.steps = 0
    assert float(a.loss(a(x), labels).detach()) > float(c.loss(c(x), labels).detach())
    with pytest.raises(RuntimeError, match="latest forward"):
        a.loss(torch.zeros(2), labels)


def test_core_view_is_a_crop_or_its_mirror():
    x = _images(4, size=16)
    same = crop_flip_view(x, rng_for("view", 0), min_scale=1.0)
    for img, view in zip(x, same):
        assert torch.allclose(view, img, atol=1e-5) or torch.allclose(view, img.flip(-1), atol=1e-5)
    cropped = crop_flip_view(x, rng_for("view", 1), min_scale=0.5)
    assert cropped.shape == x.shape and not torch.allclose(cropped, x)


def test_patch_models_average_patch_logits_and_train_every_patch():
    for name, stride in (("patch_resnet", 4), ("patch_xception", 8)):
        model = create_detector(name, input_size=SMALL).eval()
        x, labels = _images(2), torch.tensor([0, 1])
        patches = model.patch_logits(x)
        assert patches.shape[0] == 2 and patches.shape[1] == 1
        assert abs(patches.shape[-1] - SMALL // stride) <= 1
        logits = model(x)
        torch.testing.assert_close(logits, patches.mean(dim=(1, 2, 3)))
        target = labels.float().view(-1, 1, 1, 1).expand_as(patches)
        torch.testing.assert_close(
            model.loss(logits, labels), F.binary_cross_entropy_with_logits(patches, target)
        )


def test_capsule_score_is_the_mean_vote():
    model = create_detector("capsule", input_size=SMALL).eval()
    logits = model(_images(2))
    votes = model._outputs["votes"]
    assert votes.shape == (2, 4)
    torch.testing.assert_close(torch.sigmoid(logits), torch.sigmoid(votes).mean(1))
    v = squash(torch.randn(5, 8) * 10, dim=-1)
    assert (v.norm(dim=-1) < 1).all()


# --- front ends ------------------------------------------------------------------------------


def test_dct_is_orthonormal_and_bands_partition_the_spectrum():
    d = dct_matrix(16)
    torch.testing.assert_close(d @ d.T, torch.eye(16), atol=1e-5, rtol=0)
    x = torch.randn(16, 16)
    torch.testing.assert_close(d.T @ (d @ x @ d.T) @ d, x, atol=1e-4, rtol=0)
    n = 64
    bands = band_mask(n, 0, n / 2.82) + band_mask(n, n / 2.82, n / 2) + band_mask(n, n / 2, 2 * n)
    assert torch.equal(bands, torch.ones(n, n))
    assert band_mask(n, 0, n / 2.82).mean() == pytest.approx(1 / 16, abs=0.01)


def test_f3net_rejects_other_sizes():
    model = create_detector("f3net", input_size=SMALL).eval()
    with pytest.raises(ValueError, match="64 px"):
        model(_images(1, size=48))


def test_srm_residual_ignores_flat_and_linear_images():
    srm = SRMFilter()
    ramp = torch.linspace(-1, 1, 32)
    img = (0.3 + ramp[None, :] + 0.5 * ramp[:, None]).expand(1, 3, 32, 32)
    out = srm(img)[..., 2:-2, 2:-2]
    assert out.abs().max() < 1e-5
    noisy = srm(_images(1, size=32))
    assert noisy.abs().max() > 0.1 and noisy.abs().max() <= 3.0


def test_spsl_phase_image_drops_the_amplitude():
    x = _images(2, size=32)
    torch.testing.assert_close(phase_image(x), phase_image(3.0 * x), atol=1e-5, rtol=0)
    assert phase_image(x).shape == (2, 1, 32, 32)


# --- head pose -------------------------------------------------------------------------------


def _landmark_sets(n, seed, image_size=256):
    """Projected generic faces; fakes get a central face posed a few degrees off the head."""
    rng = rng_for("headpose-test", seed)
    model, cam = generic_face_3d(), camera_matrix(image_size)
    pts, labels = [], []
    for i in range(n):
        label = i % 2
        shape = model + rng.normal(0, 1.0, model.shape)
        rvec = np.deg2rad([rng.uniform(-12, 12), rng.uniform(-25, 25), rng.uniform(-8, 8)])
        tvec = np.array([rng.uniform(-8, 8), rng.uniform(-8, 8), rng.uniform(260, 320)])
        p = cv2.projectPoints(shape, rvec, tvec, cam, np.zeros(4))[0].reshape(68, 2)
        if label:
            axis = rng.normal(size=3)
            off = rvec + np.deg2rad(rng.uniform(6, 12)) * axis / np.linalg.norm(axis)
            central = cv2.projectPoints(shape, off, tvec + rng.normal(0, 3, 3), cam, np.zeros(4))[
                0
            ].reshape(68, 2)
            p[CENTRAL_FACE] = central[CENTRAL_FACE]
        pts.append(p + rng.normal(0, 0.3, p.shape))
        labels.append(label)
    return np.array(pts, dtype=np.float32), np.array(labels)


def test_pose_features_vanish_for_a_consistent_face():
    model, cam = generic_face_3d(), camera_matrix(256)
    p = cv2.projectPoints(
        model, np.array([0.1, -0.3, 0.05]), np.array([5.0, -3.0, 300.0]), cam, np.zeros(4)
    )[0].reshape(1, 68, 2)
    feats = pose_difference_features(p, 256)
    assert np.abs(feats).max() < 1e-6


def test_headpose_separates_inconsistent_central_faces(tmp_path):
    x_train, y_train = _landmark_sets(120, "train")
    x_test, y_test = _landmark_sets(80, "test")
    x_test[3] = np.nan
    detector = create_detector("headpose", image_size=256).fit(x_train, y_train)
    scores = detector.predict_proba(x_test)
    assert scores.dtype == np.float32 and np.isnan(scores[3])
    keep = ~np.isnan(scores)
    assert auc(y_test[keep], scores[keep]) > 0.9
    detector.save(tmp_path / "headpose.pt")
    again = HeadPoseSVM.load(tmp_path / "headpose.pt")
    np.testing.assert_array_equal(again.predict_proba(x_test), scores)

    frame = pd.DataFrame(
        {
            "sample_id": [f"s{i:03d}" for i in range(80)],
            "dataset": "d",
            "split": "test",
            "label": y_test,
            "method": "m",
            "group": "g",
            "subject_id": "x",
            "path": "p",
        }
    )
    preds = headpose_predictions(detector, frame, x_test)
    assert list(preds.columns) == PREDICTION_COLUMNS
    assert (preds["detector"] == "headpose").all()


def test_headpose_needs_both_classes():
    x, y = _landmark_sets(6, "one")
    with pytest.raises(ValueError, match="real and fake"):
        HeadPoseSVM().fit(x, np.zeros(len(y)))
    with pytest.raises(RuntimeError, match="before fit"):
        HeadPoseSVM().predict_proba(x)


# --- DeepfakeBench ---------------------------------------------------------------------------


def _as_deepfakebench(model, arch):
    """Our state dict in DeepfakeBench's layout (two-class head, their module names)."""
    out = {}
    for key, value in model.state_dict().items():
        if key.startswith("backbone.fc."):
            part = key.rsplit(".", 1)[1]
            real = torch.full_like(value, 0.25)  # any real-class row
            out[f"backbone.last_linear.{part}"] = torch.cat([real, real + value])
        elif arch == "ffd" and key.startswith("attention."):
            out[
                {
                    "attention.0.weight": "map.c.conv1.weight",
                    "attention.1.weight": "map.c.pointwise.weight",
                }[key]
            ] = value
        elif arch == "capsule":
            for ours, theirs in (
                ("vgg.", "vgg_ext.vgg_1."),
                ("capsules.", "fea_ext.capsules."),
                ("routing.", "routing_stats."),
            ):
                if key.startswith(ours):
                    out[theirs + key[len(ours) :]] = value
        else:
            out[key] = value
    if arch != "capsule":
        out["backbone.adjust_channel.0.weight"] = torch.zeros(512, 2048, 1, 1)
    return out


@pytest.mark.parametrize("arch", ["xception", "ffd", "capsule"])
def test_deepfakebench_round_trip(arch, tmp_path):
    ours = create_detector(arch, input_size=SMALL).eval()
    with torch.no_grad():  # non-trivial BN statistics, so that they are checked too
        for m in ours.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
    path = tmp_path / "ckpt.pth"
    torch.save({"module." + k: v for k, v in _as_deepfakebench(ours, arch).items()}, path)
    loaded = load_deepfakebench(path, arch, input_size=SMALL)
    x = _images(2)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), ours(x), atol=1e-5, rtol=1e-5)


def test_deepfakebench_mismatch_lists_the_keys():
    ours = create_detector("xception", input_size=SMALL)
    state = _as_deepfakebench(ours, "xception")
    state["backbone.block99.rep.0.weight"] = torch.zeros(1)
    state["loss_func.weight"] = torch.zeros(1)
    del state["backbone.conv1.weight"]
    state["backbone.conv2.weight"] = torch.zeros(3, 3)
    with pytest.raises(CheckpointMismatch) as err:
        load_deepfakebench(state, "xception", input_size=SMALL)
    message = str(err.value)
    for key in (
        "loss_func.weight",
        "backbone.block99.rep.0.weight",
        "backbone.conv1.weight",
        "backbone.conv2.weight",
    ):
        assert key in message
    with pytest.raises(KeyError, match="supported"):
        load_deepfakebench(state, "meso4")


# --- external score files --------------------------------------------------------------------


@pytest.fixture()
def samples():
    rows = [
        {
            "sample_id": f"{split}_{i}",
            "dataset": "d",
            "split": split,
            "label": i % 2,
            "method": "faceswap" if i % 2 else "real",
            "group": f"g{i % 3}",
            "subject_id": f"s{i}",
            "path": f"{split}/{i}.png",
        }
        for split in ("train", "test")
        for i in range(12)
    ]
    return pd.DataFrame(rows)


def test_external_scores_become_predictions(samples, tmp_path):
    test_ids = [f"test_{i}" for i in range(12)]
    scores = pd.DataFrame({"sample_id": test_ids[::-1], "score": np.linspace(0, 1, 12)[::-1]})
    scores.to_csv(tmp_path / "scores.csv", index=False)
    scores.to_parquet(tmp_path / "scores.parquet")
    for path in (tmp_path / "scores.csv", tmp_path / "scores.parquet"):
        preds = external_predictions(path, samples, "vendor", splits=("test",))
        assert list(preds.columns) == PREDICTION_COLUMNS
        assert list(preds["sample_id"]) == sorted(test_ids)
        by_id = dict(zip(scores["sample_id"], scores["score"]))
        np.testing.assert_allclose(
            preds["score"], [by_id[s] for s in preds["sample_id"]], rtol=1e-6
        )
        assert preds["score"].dtype == np.float32
        assert (preds["detector"] == "vendor").all() and (preds["variant"] == "clean").all()


def test_external_scores_are_validated(samples):
    ids = [f"test_{i}" for i in range(12)]
    good = pd.DataFrame({"sample_id": ids, "score": 0.5})
    with pytest.raises(ScoreFileError, match="ghost_1"):
        external_predictions(
            pd.concat(
                [good, pd.DataFrame({"sample_id": ["ghost_1", "ghost_2"], "score": [0.1, 0.2]})]
            ),
            samples,
            "v",
            splits=("test",),
        )
    with pytest.raises(ScoreFileError, match="no score for 2 sample.*test_10, test_11"):
        external_predictions(good.iloc[:10], samples, "v", splits=("test",))
    bad = good.copy()
    bad.loc[4, "score"] = 1.5
    bad.loc[5, "score"] = np.nan
    with pytest.raises(ScoreFileError, match="2 score.*test_4, test_5"):
        external_predictions(bad, samples, "v", splits=("test",))
    with pytest.raises(ScoreFileError, match="more than once.*test_0"):
        external_predictions(pd.concat([good, good.iloc[:1]]), samples, "v", splits=("test",))
    with pytest.raises(ScoreFileError, match="lacks column"):
        external_predictions(good.rename(columns={"score": "prob"}), samples, "v", splits=("test",))
    # train ids are known samples outside the requested splits: ignored
    extra = pd.concat([good, pd.DataFrame({"sample_id": ["train_0"], "score": [0.3]})])
    assert len(external_predictions(extra, samples, "v", splits=("test",))) == 12
