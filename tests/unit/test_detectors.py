"""Detectors: registry, forward shape, one optimisation step, learning an easy task, checkpoints."""

import cv2
import numpy as np
import pandas as pd
import pytest
import torch

from fairforge.detector_kinds import predict, train_detector
from fairforge.detectors import DETECTORS, create_detector, list_detectors
from fairforge.images import write_image
from fairforge.metrics.detection import auc
from fairforge.runtime import load_checkpoint
from fairforge.seeding import rng_for
from fairforge.training.detector import TrainConfig

SMALL = 64


@pytest.mark.parametrize("name", list_detectors(kind="network"))
def test_forward_gives_one_logit_per_image(name):
    model = create_detector(name, input_size=SMALL).eval()
    with torch.no_grad():
        out = model(torch.randn(3, 3, SMALL, SMALL))
    assert out.shape == (3,)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", list_detectors(kind="network"))
def test_one_step_changes_weights(name):
    """One step moves exactly the parameters the loss reaches (a non-zero gradient), frozen
    ones stay, and the gradient runs from the head back to the first trainable layer."""
    torch.manual_seed(0)
    model = create_detector(name, input_size=SMALL).train()
    named = dict(model.named_parameters())
    before = {k: p.detach().clone() for k, p in named.items()}
    opt = torch.optim.Adam(model.parameters(), lr=2e-4)
    labels = torch.tensor([0, 1, 0, 1])
    loss = model.loss(model(torch.randn(4, 3, SMALL, SMALL)), labels, {})
    loss.backward()
    reached = {k for k, p in named.items() if p.grad is not None and p.grad.any()}
    opt.step()
    changed = {k for k, p in named.items() if not torch.equal(before[k], p.detach())}
    assert changed == reached
    trainable = [k for k, p in named.items() if p.requires_grad]
    assert {trainable[0], trainable[-1]} <= changed, trainable


def test_unknown_detector_lists_the_registered_ones():
    with pytest.raises(KeyError, match="meso4"):
        DETECTORS.get("no_such_detector")


def test_a_registration_is_checked_and_the_class_learns_its_name():
    toy = type("Toy", (torch.nn.Module,), {})
    with pytest.raises(ValueError, match="kind must be one of"):
        DETECTORS.register("toy_bad_kind", toy, kind="magic")
    with pytest.raises(TypeError, match=r"unknown registration keys \['colour'\]"):
        DETECTORS.register("toy_bad_key", toy, colour="red")
    with pytest.raises(ValueError, match="names no recipe"):
        DETECTORS.register("toy_no_recipe", toy, recipe_name="toy")
    assert not {"toy_bad_kind", "toy_bad_key", "toy_no_recipe"} & set(DETECTORS.names())
    with DETECTORS.registered("toy", toy, kind="classical"):
        assert toy.name == "toy" and "toy" in list_detectors(kind="classical")
        assert DETECTORS.metadata("toy")["recipe"] is None
    assert "toy" not in DETECTORS


def _textured(rng, size):
    base = rng.normal(128, 40, (size // 4, size // 4, 3))
    img = cv2.resize(base, (size, size), interpolation=cv2.INTER_CUBIC)
    img += rng.normal(0, 25, img.shape)  # fine detail that blurring removes
    return np.clip(img, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def blur_task(tmp_path_factory):
    """Real: textured images; fake: the same kind of image with its face region blurred."""
    root = tmp_path_factory.mktemp("blur_task")
    rows = []
    for split, n in (("train", 96), ("val", 32), ("test", 32)):
        for i in range(n):
            rng = rng_for("blur", split, i)
            img = _textured(rng, SMALL)
            label = i % 2
            if label:
                c = SMALL // 4
                img[c:-c, c:-c] = cv2.GaussianBlur(img, (7, 7), 2.0)[c:-c, c:-c]
            path = f"{split}/{i:03d}.png"
            write_image(root / path, img)
            rows.append(
                {
                    "sample_id": f"{split}_{i:03d}",
                    "dataset": "blur",
                    "split": split,
                    "label": label,
                    "method": "faceswap" if label else "real",
                    "group": f"g{i % 4}",
                    "subject_id": f"s{i // 2}",
                    "path": path,
                    "mask_path": None,
                }
            )
    return root, pd.DataFrame(rows)


@pytest.mark.parametrize("arch", ["meso4", "meso4inception", "patch_resnet"])
def test_small_detectors_learn_an_easy_task_and_round_trip(arch, blur_task, tmp_path):
    root, samples = blur_task
    # from random weights: the test runs offline (Patch-Forensics' paper starts from ImageNet)
    cfg = TrainConfig(
        arch=arch, input_size=SMALL, epochs=8, batch_size=16, lr=1e-3, seed=1, init="random"
    )
    ckpt = tmp_path / "model.pt"
    log = train_detector(samples, root, cfg, ckpt, tmp_path / "log.csv")
    assert list(log.columns[:4]) == ["epoch", "train_loss", "val_loss", "val_auc"]
    assert log["train_loss"].iloc[-1] < log["train_loss"].iloc[0]

    preds = predict(ckpt, samples, root, arch, splits=("test",))
    assert auc(preds["label"].to_numpy(), preds["score"].to_numpy()) > 0.9
    assert preds["score"].dtype == np.float32
    assert list(preds["sample_id"]) == sorted(preds["sample_id"])

    model, meta = load_checkpoint(ckpt)
    assert meta["arch"] == arch and meta["input_size"] == SMALL
    again = predict(ckpt, samples, root, arch, splits=("test",))
    np.testing.assert_array_equal(preds["score"].to_numpy(), again["score"].to_numpy())


def test_missing_checkpoint_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "absent.pt")):
        load_checkpoint(tmp_path / "absent.pt")


def test_headpose_trains_and_predicts_through_the_shared_protocol(tmp_path):
    """The classical detector goes through the same train/predict entry points, and its
    checkpoint holds tensors only (loadable with weights_only=True)."""
    from fairforge.sources.synthetic import render_face, sample_subject, sample_view

    rows = []
    for split, n in (("train", 12), ("val", 6), ("test", 6)):
        for i in range(n):
            sid = f"{split}{i // 2}"
            img = render_face(
                sample_subject(1, sid, "tone2", "female"), sample_view(1, f"{split}_{i}"), size=256
            )
            label = i % 2
            if label:  # rotate the central face only: the inconsistency the detector looks for
                c = 128
                rot = cv2.getRotationMatrix2D((c, c + 10), 12, 1.0)
                warped = cv2.warpAffine(img, rot, (256, 256), borderMode=cv2.BORDER_REFLECT)
                img[80:190, 80:176] = warped[80:190, 80:176]
            path = f"{split}/{i:02d}.png"
            write_image(tmp_path / path, img)
            rows.append(
                {
                    "sample_id": f"{split}_{i:02d}",
                    "dataset": "d",
                    "split": split,
                    "label": label,
                    "method": "faceswap" if label else "real",
                    "group": "g",
                    "subject_id": sid,
                    "path": path,
                    "mask_path": None,
                }
            )
    samples = pd.DataFrame(rows)
    ckpt = tmp_path / "headpose.pt"
    log = train_detector(
        samples, tmp_path, TrainConfig(arch="headpose", model={"image_size": 256}), ckpt
    )
    assert log["n_train"].iloc[0] == 12
    payload = torch.load(ckpt, weights_only=True)
    assert payload["arch"] == "headpose" and payload["features"].shape[1] == 6
    preds = predict(ckpt, samples, tmp_path, "headpose", splits=("test",))
    assert len(preds) == 6 and preds["score"].between(0, 1).all()
    assert (preds["detector"] == "headpose").all()
