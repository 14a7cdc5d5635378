"""The detector zoo: auxiliary losses use what they claim, frequency and residual front ends,
the head-pose detector, DeepfakeBench checkpoints and external score files."""

import cv2
import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from fairforge.columns import PREDICTION_COLUMNS
from fairforge.detectors import DETECTORS, create_detector, detector_kind, list_detectors
from fairforge.detectors.capsule import VGG19_FEATURES, squash, vgg19_head_layers
from fairforge.detectors.conv_lstm import LSTM
from fairforge.detectors.core import crop_flip_view
from fairforge.detectors.deepfakebench import CheckpointMismatch, load_deepfakebench
from fairforge.detectors.external import ScoreFileError, external_predictions
from fairforge.detectors.f3net import band_mask, dct_matrix
from fairforge.detectors.face_xray import xray_target
from fairforge.detectors.headpose import (
    CENTRAL_FACE,
    HeadPoseSVM,
    camera_matrix,
    generic_face_3d,
    headpose_predictions,
    pose_difference_features,
)
from fairforge.detectors.multi_attention import AttentionMap, attention_pool
from fairforge.detectors.spsl import phase_image
from fairforge.detectors.srm import SRMFilter
from fairforge.detectors.uia_vit import central_patches, mahalanobis
from fairforge.forgery import create_method
from fairforge.forgery.fwa import warp_artefact
from fairforge.metrics.detection import auc
from fairforge.registry import UnknownName
from fairforge.seeding import rng_for

SMALL = 64
TINY = 32  # the smallest input Xception-based models take (its exit flow reaches 1×1)


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
        "fwa",
        "face_xray",
        "multi_attention",
        "conv_lstm",
        "uia_vit",
    }
    assert expected <= set(list_detectors(kind="network"))
    assert list_detectors(kind="classical") == ["headpose"]
    assert list_detectors(kind="external") == ["external"]
    # The kinds partition the listing: each registered name is of exactly one known kind.
    by_kind = {k: list_detectors(kind=k) for k in ("network", "classical", "external")}
    assert sorted(n for names in by_kind.values() for n in names) == sorted(list_detectors())
    assert all(detector_kind(n) == k for k, names in by_kind.items() for n in names)
    assert isinstance(create_detector("headpose", image_size=128), HeadPoseSVM)
    with pytest.raises(UnknownName, match="headpose"):
        create_detector("nope")
    assert DETECTORS.get("ffd").needs_masks
    assert not DETECTORS.get("xception").needs_masks


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


def test_capsule_vgg_is_torchvision_s_vgg19_up_to_its_third_pooling():
    """The VGG-19 layout kept in capsule.py is torchvision's (and timm's), name for name."""
    from timm.models.vgg import cfgs
    from torchvision.models import vgg19

    assert VGG19_FEATURES == tuple(cfgs["vgg19"])
    reference = vgg19().features[:19].state_dict()
    ours = vgg19_head_layers().state_dict()
    assert {k: v.shape for k, v in ours.items()} == {k: v.shape for k, v in reference.items()}


# --- front ends ------------------------------------------------------------------------------


def test_dct_is_orthonormal_and_bands_partition_the_spectrum():
    d = dct_matrix(16)
    torch.testing.assert_close(d @ d.T, torch.eye(16), atol=1e-5, rtol=0)
    x = torch.randn(16, 16)
    torch.testing.assert_close(d.T @ (d @ x @ d.T) @ d, x, atol=1e-4, rtol=0)
    n = 64
    low, mid = band_mask(n, 0, n // 2.82), band_mask(n, n // 2.82, n // 2)
    high = band_mask(n, n // 2, 2 * n)
    # the authors' edges are inclusive: the bands cover the spectrum and neighbours share
    # exactly their boundary diagonal (i + j = 22 and i + j = 32)
    assert torch.equal((low + mid + high).clamp(max=1), torch.ones(n, n))
    overlap = (low + mid + high) - 1
    s = torch.arange(n)[:, None] + torch.arange(n)[None, :]
    assert torch.equal(overlap.bool(), (s == n // 2.82) | (s == n // 2))
    assert low.mean() == pytest.approx(1 / 16, abs=0.01)


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
        load_deepfakebench(state, "meso5")


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


# --- the Benchmark and Assessment papers' detectors -------------------------------------------

NEW = ("fwa", "face_xray", "multi_attention", "conv_lstm", "uia_vit")


def _batch_for(name, n=4, size=SMALL):
    """Inputs, labels and batch extras for one training step of ``name``."""
    labels = torch.tensor([0, 1] * (n // 2))
    if name == "conv_lstm":
        x = torch.stack([_images(3, size, seed=i) for i in range(n)])  # (B, T, 3, H, W) clips
    else:
        x = _images(n, size)
    mask = torch.zeros(n, 1, size, size)
    mask[1::2, :, size // 4 : -size // 4, size // 4 : -size // 4] = 1.0
    return x, labels, {"mask": mask}


@pytest.mark.parametrize("name", NEW)
def test_new_detectors_step_and_round_trip(name, tmp_path):
    """Forward on the detector's own input, one optimiser step that changes the weights, and a
    state-dict round trip through a file (weights_only) that gives equal outputs."""
    model = create_detector(name, input_size=SMALL).train()
    x, labels, batch = _batch_for(name)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss = model.loss(model(x), labels, batch)
    assert torch.isfinite(loss)
    loss.backward()
    opt.step()
    changed = [k for k, v in model.named_parameters() if not torch.equal(before[k], v.detach())]
    names = list(before)
    # the gradient reaches the first layer as well as the head (timm's ResNets start each
    # residual branch at zero, so not every inner weight moves on the first step)
    assert names[0] in changed and names[-1] in changed, name

    model.eval()
    path = tmp_path / "state.pt"
    torch.save(model.state_dict(), path)
    again = create_detector(name, input_size=SMALL)
    again.load_state_dict(torch.load(path, weights_only=True))
    again.eval()
    with torch.no_grad():
        out = model(x)
        assert out.shape == (len(x),) and torch.isfinite(out).all()
        torch.testing.assert_close(again(x), out)


def _face(size=96):
    """A textured face-sized image with 68 landmarks spread over its centre."""
    rng = rng_for("fwa-face", 0)
    base = rng.normal(128, 40, (size // 4, size // 4, 3))
    img = cv2.resize(base, (size, size), interpolation=cv2.INTER_CUBIC)
    img = np.clip(img + rng.normal(0, 25, img.shape), 0, 255).astype(np.uint8)
    t = np.linspace(0, 2 * np.pi, 68, endpoint=False)
    lm = np.stack([size / 2 + size * 0.3 * np.cos(t), size / 2 + size * 0.35 * np.sin(t)], 1)
    return img, lm.astype(np.float32)


def test_fwa_artefact_removes_detail_inside_the_face_only():
    img, lm = _face()
    res = warp_artefact(img, lm, rng_for("fwa", 1), scale_range=(0.3, 0.3))
    inside = res.mask > 0
    assert inside.mean() > 0.2
    np.testing.assert_array_equal(res.image[~inside], img[~inside])
    core = cv2.erode(res.mask, np.ones((9, 9), np.uint8)) > 0

    def detail(a):
        return cv2.Laplacian(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.CV_64F)[core].var()

    assert detail(res.image) < 0.3 * detail(img)  # shrunk to 30 %: the fine texture is gone
    again = create_method("fwa")(img, lm, None, None, rng_for("fwa", 1))
    other = create_method("fwa")(img, lm, None, None, rng_for("fwa", 2))
    np.testing.assert_array_equal(
        again.image, create_method("fwa")(img, lm, None, None, rng_for("fwa", 1)).image
    )
    assert other.extra != again.extra or not np.array_equal(other.image, again.image)
    assert DETECTORS.get("fwa").online_forgery == "fwa"
    assert DETECTORS.get("face_xray").online_forgery == "xray"


def test_xray_target_is_the_blending_boundary():
    mask = torch.zeros(1, 1, 32, 32)
    mask[..., 8:24, 8:24] = 1.0
    target = xray_target(mask, (32, 32), sigma=1.0)[0, 0]
    assert float(xray_target(torch.zeros_like(mask), (32, 32), 1.0).abs().max()) == 0.0
    assert float(target[16, 16]) < 1e-3 and float(target[2, 2]) == 0.0  # inside and far out
    row = target[16]  # across the edges at 7.5 and 23.5: M ≈ 1/2 there, so 4 M (1 - M) ≈ 1
    assert float(row.max()) > 0.8 and int(row[:16].argmax()) in (7, 8)
    assert float(target.max()) <= 1.0


def test_face_xray_map_loss_follows_the_mask():
    model = create_detector("face_xray", input_size=SMALL, map_weight=1.0).train()
    x, labels, batch = _batch_for("face_xray", n=2)
    logits = model(x)
    xray = model._outputs["xray"]
    assert xray.shape == (2, 1, SMALL // 4, SMALL // 4)
    bce = F.binary_cross_entropy_with_logits(logits, labels.float())
    expected = bce + model.map_loss(xray, batch["mask"])
    torch.testing.assert_close(model.loss(logits, labels, batch), expected)
    # no masks: only the real image's map is pulled to zero
    logits = model(x)
    xray = model._outputs["xray"]
    weak = bce + model.map_loss(xray[:1], torch.zeros_like(xray[:1]))
    torch.testing.assert_close(model.loss(logits, labels, {}), weak)
    model.eval()
    with torch.no_grad():
        assert model.xray(x).shape == (2, 1, SMALL, SMALL)


def test_bilinear_attention_pooling():
    features = torch.randn(1, 5, 4, 4)
    one_hot = torch.zeros(1, 2, 4, 4)
    one_hot[0, 0, 1, 2] = 1.0
    one_hot[0, 1, 3, 0] = 2.0
    pooled = attention_pool(features, one_hot, "mass")
    torch.testing.assert_close(pooled[0, 0], features[0, :, 1, 2])
    torch.testing.assert_close(pooled[0, 1], features[0, :, 3, 0])
    unit = attention_pool(features, one_hot, "l2")
    torch.testing.assert_close(unit.norm(dim=-1), torch.ones(1, 2))


def test_multi_attention_maps_and_regional_independence():
    model = create_detector("multi_attention", input_size=SMALL).train()
    x, labels, _ = _batch_for("multi_attention")
    logits = model(x)
    out = dict(model._outputs)
    attentions = out["attentions"]
    assert attentions.shape[:2] == (4, 4) and (attentions >= 0).all()
    assert model.centres is None
    loss = model.loss(logits, labels)
    assert model.centres.abs().sum() > 0  # the centres moved toward the batch
    ril = (loss - F.binary_cross_entropy_with_logits(logits, labels.float())).detach()
    assert float(ril) > 0
    centres = model.centres.clone()
    model.eval()
    with torch.no_grad():
        model.loss(model(x), labels)
    torch.testing.assert_close(model.centres, centres)  # evaluation leaves them alone
    # centres far apart and every feature on its centre: no inter or intra term
    v = attention_pool(out["d"], attentions, "l2").detach()
    model.centres = v[0].clone()
    model.intra_margins = (10.0, 10.0)
    model.inter_margin = 0.0
    assert float(model.regional_independence(out["d"], attentions, labels)) == 0.0


def test_multi_attention_border_mask_is_the_authors():
    """The 24 × 24 mask with two zero cells on each side, resized nearest: at 24 cells the
    border is two cells wide, at 6 only the first row and column are dropped."""
    heads = AttentionMap(8, 2).eval()
    with torch.no_grad():
        big = heads(torch.randn(1, 8, 24, 24))
        small = heads(torch.randn(1, 8, 6, 6))
    zero = big[0, 0] == 0
    assert zero[:2].all() and zero[-2:].all() and not zero[2:-2, 2:-2].any()
    assert (small[0, 0, 0] == 0).all() and (small[0, 0, :, 0] == 0).all()
    assert (small[0, 0, 1:, 1:] > 0).all()


def test_conv_lstm_reads_frames_in_order():
    model = create_detector("conv_lstm", input_size=SMALL).eval()
    clips = torch.stack([_images(4, seed=i) for i in range(2)])
    with torch.no_grad():
        out = model(clips)
        assert out.shape == (2,)
        assert not torch.allclose(model(clips.flip(1)), out)  # the order of frames matters
        torch.testing.assert_close(model(clips[:, 0]), model(clips[:, :1]))  # a frame = T=1
    with pytest.raises(ValueError, match="clips"):
        model(torch.zeros(2, 4, 4, SMALL, SMALL))


def test_conv_lstm_cell_is_a_standard_lstm():
    ours, ref = LSTM(6, 5), torch.nn.LSTM(6, 5, batch_first=True)
    with torch.no_grad():
        ours.input_gates.weight.copy_(ref.weight_ih_l0)
        ours.input_gates.bias.copy_(ref.bias_ih_l0)
        ours.hidden_gates.weight.copy_(ref.weight_hh_l0)
        ours.hidden_gates.bias.copy_(ref.bias_hh_l0)
        x = torch.randn(3, 7, 6)
        torch.testing.assert_close(ours(x), ref(x)[0][:, -1], atol=1e-6, rtol=1e-5)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in ref.parameters())


def test_uia_vit_learns_patch_statistics_without_pixel_labels():
    model = create_detector("uia_vit", input_size=SMALL).train()
    grid = model.grid
    assert grid == (SMALL // 16, SMALL // 16)
    x, labels, _ = _batch_for("uia_vit")
    assert not model.real_seen and not model.fake_seen
    with torch.no_grad():
        features = model._run(x)[1]
    prior = model.patch_fake_probability(features)
    torch.testing.assert_close(prior[0], central_patches(grid).float())
    model.set_training_progress(1, 4)  # first epoch: the Gaussians are estimated, no PCL
    logits = model(x)
    bce = F.binary_cross_entropy_with_logits(logits, labels.float())
    torch.testing.assert_close(model.loss(logits, labels, {}), bce)
    assert model.real_seen and model.fake_seen
    model.set_training_progress(2, 4)  # then PCL and the targets' regulariser
    logits = model(x)
    loss = model.loss(logits, labels, {})
    loss.backward()
    assert model.c_real.grad is not None and model.c_cross.grad is not None
    # the targets: a real image's pairs c_real (1 on the diagonal); a fake's by patch labels
    patch_fake = torch.tensor([[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]])
    with torch.no_grad():
        target = model.consistency_target(patch_fake, torch.tensor([0, 1]))
    c_real, c_fake, c_cross = (float(p) for p in (model.c_real, model.c_fake, model.c_cross))
    assert target[0, 0, 0] == 1.0 and target[0, 0, 1] == pytest.approx(c_real)
    assert target[1, 0, 2] == pytest.approx(c_fake) and target[1, 0, 1] == pytest.approx(c_cross)
    assert target[1, 1, 1] == pytest.approx(c_real)
    model.eval()
    area = model.manipulation_map(x)
    assert area.shape == (4, *grid) and ((area >= 0) & (area <= 1)).all()


def test_uia_vit_assembly_moves_from_uniform_to_the_localisation_map():
    model = create_detector("uia_vit", input_size=SMALL).train()
    scores = torch.tensor([[4.0, -4.0, 0.0, 0.0]])
    model.set_training_progress(1, 10)  # t = 0 < 1/8: uniform
    torch.testing.assert_close(model.assembly_weights(scores), torch.full((1, 4), 0.25))
    model.eval()  # t = 1: mostly the class token's attention
    w = torch.sigmoid(torch.tensor(-12 * 0.3))
    expected = (w + (1 - w) * torch.sigmoid(scores)) / 4
    torch.testing.assert_close(model.assembly_weights(scores), expected)


def test_mahalanobis_matches_a_hand_count():
    x = torch.tensor([[1.0, 2.0], [0.0, 0.0]])
    mean = torch.tensor([1.0, 0.0])
    precision = torch.tensor([[2.0, 0.0], [0.0, 0.5]])
    torch.testing.assert_close(mahalanobis(x, mean, precision), torch.tensor([2.0**0.5, 2.0**0.5]))
