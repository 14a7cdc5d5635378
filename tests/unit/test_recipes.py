"""Recipes as data: SAM's two passes, the lr schedules (the encoders' as torch's MultiStepLR),
the optimizer and schedule registries, early stopping, balanced batches, and a recipe picked
per detector with per-key overrides."""

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from fairforge.config import validate_config
from fairforge.data import BalancedBatchSampler
from fairforge.optimizers import OPTIMIZERS, SCHEDULES, epoch_lr, lr_factor, make_optimizer
from fairforge.optimizers.sam import SAM
from fairforge.recipes import Recipe, recipe_settings
from fairforge.registry import UnknownName
from fairforge.training.detector import TrainConfig, set_epoch_lr, train_network, train_step
from fairforge.workflow import detector_settings


class _Counted(nn.Module):
    """A logistic regression that counts its forward passes."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2, 1)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.linear(x).squeeze(1)

    def loss(self, logits, labels, batch=None):
        return nn.functional.binary_cross_entropy_with_logits(logits, labels.float())

    def losses(self, logits, labels, batch=None):  # the training loop's interface
        return {"loss": self.loss(logits, labels, batch)}


def _task(n=64):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 2, generator=g)
    return {"image": x, "label": (x[:, 0] + 0.5 * x[:, 1] > 0).long()}


def test_sam_takes_two_passes_and_steps_with_the_perturbed_gradient():
    batch = _task()
    model = _Counted()
    w0 = [p.detach().clone() for p in model.parameters()]
    opt = make_optimizer(model.parameters(), {"optimizer": "sgd", "lr": 0.5, "sam": True})
    assert isinstance(opt, SAM)
    train_step(model, batch, opt)
    assert model.calls == 2
    # by hand: gradient at w0 + rho g/|g|, applied at w0
    ref = _Counted()
    with torch.no_grad():
        for p, w in zip(ref.parameters(), w0):
            p.copy_(w)
    ref.loss(ref(batch["image"]), batch["label"]).backward()
    g = [p.grad.clone() for p in ref.parameters()]
    norm = torch.sqrt(sum((x**2).sum() for x in g))
    with torch.no_grad():
        for p, gi in zip(ref.parameters(), g):
            p.add_(0.05 * gi / norm)
    ref.zero_grad()
    ref.loss(ref(batch["image"]), batch["label"]).backward()
    for p, w, r in zip(model.parameters(), w0, ref.parameters()):
        torch.testing.assert_close(p, w - 0.5 * r.grad)
    # and it learns the task
    for _ in range(30):
        train_step(model, batch, opt)
    acc = ((model(batch["image"]) > 0).long() == batch["label"]).float().mean()
    assert acc > 0.9


def test_schedules_follow_their_definitions():
    assert [lr_factor(e, 6, "constant", warmup_epochs=2) for e in (1, 2, 3, 6)] == [
        0.5,
        1.0,
        1.0,
        1.0,
    ]
    assert [lr_factor(e, 9, "step", step_size=3) for e in range(1, 8)] == pytest.approx(
        [1, 1, 1, 0.1, 0.1, 0.1, 0.01]
    )
    assert [lr_factor(e, 9, "multistep", milestones=[3, 5]) for e in (2, 3, 5)] == pytest.approx(
        [1, 0.1, 0.01]
    )
    cos = [lr_factor(e, 5, "cosine") for e in range(1, 6)]
    assert cos[0] == 1.0 and all(a > b for a, b in zip(cos, cos[1:]))
    assert [lr_factor(e, 8, "linear_decay", decay_start=0.5) for e in (4, 5, 6, 8)] == (
        pytest.approx([1.0, 1.0, 0.75, 0.25])
    )
    # the optimizer's lr follows the schedule epoch by epoch
    model = _Counted()
    cfg = TrainConfig(arch="meso4", lr=0.1, epochs=4, schedule="cosine", warmup_epochs=1)
    opt = make_optimizer(model.parameters(), {"lr": cfg.lr})
    lrs = [set_epoch_lr(opt, cfg, e) for e in range(1, 5)]
    assert lrs == pytest.approx([0.1, 0.1, 0.075, 0.025])
    assert opt.param_groups[0]["lr"] == pytest.approx(0.025)


def test_decay_after_is_torchs_multisteplr_bit_for_bit():
    """The encoders' schedule: the lr of every epoch equal, as a float, to the one torch's
    MultiStepLR (which the encoder training used) gives, repeated milestones included."""
    for lr, gamma, milestones in [(0.1, 0.1, (5, 25, 68)), (0.11, 0.3, (1, 2, 2, 4)), (1, 0.2, ())]:
        param = nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([param], lr=lr)
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, list(milestones), gamma=gamma)
        for epoch in range(1, 80):
            ours = epoch_lr(lr, epoch, 79, "decay_after", milestones=milestones, gamma=gamma)
            assert ours == opt.param_groups[0]["lr"], (lr, gamma, milestones, epoch)
            opt.step()
            sched.step()
    assert epoch_lr(0.11, 3, 9, "decay_after", milestones=(1, 2), gamma=0.3) != 0.11 * 0.3**2


def _enums(node, key: str):
    """Every enum the schema gives a property named ``key``."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key and isinstance(v, dict) and "enum" in v:
                yield v["enum"]
            yield from _enums(v, key)
    elif isinstance(node, list):
        for v in node:
            yield from _enums(v, key)


def test_every_optimizer_and_schedule_a_config_may_name_is_registered():
    """The schema's choices (detectors' recipes, trained encoders) name registered members:
    the registries own the names, and an unknown one is refused with the valid ones."""
    from fairforge.config import load_schema

    optimizers = list(_enums(load_schema(), "optimizer"))
    schedules = list(_enums(load_schema(), "schedule"))
    assert optimizers and schedules
    for enum in optimizers:
        assert set(enum) <= set(OPTIMIZERS.names())
    for enum in schedules:
        assert set(enum) < set(SCHEDULES.names())  # decay_after is the encoders' own
    with pytest.raises(ValueError, match="optimizer must be one of"):
        Recipe(optimizer="rmsprop")
    with pytest.raises(UnknownName, match="valid: adam, adamw, sgd"):
        make_optimizer([nn.Parameter(torch.zeros(1))], {"optimizer": "rmsprop", "lr": 0.1})


def test_recipes_and_their_registries_import_no_torch():
    """The workflow reads recipes while it plans; planning imports no torch."""
    import subprocess
    import sys

    code = (
        "import sys, fairforge.recipes, fairforge.optimizers, fairforge.workflow; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_balanced_batches_are_balanced_and_cover_the_larger_class():
    labels = np.array([0] * 10 + [1] * 27)
    sampler = BalancedBatchSampler(labels, 8, seed=3)
    sampler.set_epoch(2)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 7
    for batch in batches:
        assert {e for e, _ in batch} == {2}
        assert sorted(labels[[i for _, i in batch]].tolist()) == [0] * 4 + [1] * 4
    fakes = [i for b in batches for _, i in b if labels[i] == 1]
    assert set(fakes) == set(range(10, 37))  # every fake seen in the epoch
    sampler.set_epoch(3)
    assert list(sampler) != batches  # a new draw per epoch
    with pytest.raises(ValueError, match="even"):
        BalancedBatchSampler(labels, 7)


def _samples(tmp_path, n=8):
    import cv2

    rng = np.random.default_rng(0)
    rows = []
    for split in ("train", "val"):
        for i in range(n):
            img = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
            cv2.imwrite(str(tmp_path / f"{split}{i}.png"), img)
            rows.append(
                {
                    "sample_id": f"{split}{i}",
                    "path": f"{split}{i}.png",
                    "label": i % 2,
                    "split": split,
                    "method": "faceswap" if i % 2 else "real",
                    "group": "g",
                }
            )
    return pd.DataFrame(rows)


def test_early_stopping_stops_and_balanced_batches_train(tmp_path):
    samples = _samples(tmp_path)
    cfg = TrainConfig(
        arch="meso4",
        input_size=32,
        epochs=20,
        batch_size=4,
        device="cpu",
        lr=1e-9,  # random images: nothing to learn
        patience=2,
        balanced_batches=True,
    )
    log = train_network(samples, tmp_path, cfg, tmp_path / "m.pt")
    aucs = log["val_auc"].to_numpy()
    best = int(np.argmax(aucs)) + 1  # the first epoch with the best AUC
    assert len(log) == best + 2 < 20  # stopped two epochs without a better AUC
    assert log["lr"].tolist() == pytest.approx([1e-9] * len(log))


def test_recipe_per_detector_with_overrides():
    config = validate_config(
        {
            "training": {"epochs": 3},
            "detectors": {
                "x": {"arch": "xception"},
                "c": {"arch": "capsule", "recipe": "assessment", "lr": 1e-4},
                # SBI's own recipe (its registration's), trained here from random weights
                "s": {"arch": "efficientnet_b4", "recipe": "sbi", "init": "random"},
            },
        }
    )
    x, c, s = (detector_settings(config, name) for name in "xcs")
    assert (x["recipe"], x["lr"], x["weight_decay"], x["augment"]) == (
        "deepfakebench",
        2e-4,
        5e-4,
        "deepfakebench",
    )
    assert x["epochs"] == c["epochs"] == 3  # training's key beats the recipe's
    assert (c["lr"], c["input_size"], c["frames_train"]) == (1e-4, 300, 100)
    assert (s["sam"], s["optimizer"], s["lr"], s["epochs"]) == (True, "sgd", 1e-3, 3)
    for settings in (x, c, s):
        TrainConfig(**settings)  # what the train rule builds
    assert recipe_settings("assessment", "capsule")["epochs"] == 25
    assert recipe_settings("assessment", "uia_vit")["lr"] == 3e-5


def test_the_assessment_recipe_is_its_section_5_1_3():
    """Adam (torch's β 0.9, 0.999) for Capsule 25 epochs at 5e-4, Xception 10 at 1e-3, UIA-ViT
    8 at 3e-5; SBI's EfficientNet-B4 by SAM for 100 epochs at 1e-3, batch 32; 300 px faces,
    100 frames per training video and 32 per test video, and no augmentation (§3.3)."""
    expected = {
        "capsule": ("adam", False, 25, 5e-4),
        "xception": ("adam", False, 10, 1e-3),
        "uia_vit": ("adam", False, 8, 3e-5),
        "efficientnet_b4": ("sgd", True, 100, 1e-3),
    }
    for arch, (optimizer, sam, epochs, lr) in expected.items():
        r = recipe_settings("assessment", arch)
        assert (r["optimizer"], r["sam"], r["epochs"], r["lr"]) == (optimizer, sam, epochs, lr)
        assert (r["batch_size"], r["input_size"], r["frames_train"], r["frames_test"]) == (
            32,
            300,
            100,
            32,
        )
        assert (r["augment"], r["weight_decay"], r["balanced_batches"]) == ("none", 0.0, False)
    sbi = recipe_settings("assessment", "efficientnet_b4")
    assert (sbi["momentum"], sbi["schedule"], sbi["decay_start"]) == (0.9, "linear_decay", 0.75)
    # the optimizer the Adam recipes build has the paper's betas
    from fairforge.optimizers import build_optimizer

    adam = build_optimizer([torch.nn.Parameter(torch.zeros(1))], "adam", 1e-3, 0.0, 0.9)
    assert adam.defaults["betas"] == (0.9, 0.999)
    with pytest.raises(KeyError, match="not recipe keys"):
        recipe_settings("deepfakebench", epoch=3)


def test_geometric_augmentation_moves_the_mask_and_waits_its_warmup(tmp_path):
    import cv2

    from fairforge.data import FaceDataset
    from fairforge.perturb.augment import DeepfakeBenchAug

    img = np.zeros((32, 32, 3), np.uint8)
    img[:, :8] = 255  # a bright left edge
    cv2.imwrite(str(tmp_path / "a.png"), img)
    cv2.imwrite(str(tmp_path / "m.png"), img[:, :, 0])  # its mask
    frame = pd.DataFrame([{"sample_id": "a", "path": "a.png", "mask_path": "m.png", "label": 1}])
    flip = DeepfakeBenchAug(p_flip=1.0, p_rotate=0, p_blur=0, p_brightness=0, p_jpeg=0)
    ds = FaceDataset(
        frame,
        tmp_path,
        32,
        (0, 0, 0),
        (1, 1, 1),
        augment=flip,
        mask_column="mask_path",
        augment_warmup=2,
    )
    for epoch, flipped in ((1, False), (2, False), (3, True)):
        item = ds[(epoch, 0)]
        right = item["image"][0, :, -8:].mean() > 0.9
        assert bool(right) is flipped
        assert torch.equal(item["mask"][0] > 0.5, item["image"][0] > 0.5)
