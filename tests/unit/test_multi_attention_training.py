"""Multi-attention's training as published: the attention-guided data augmentation (AGDA) and
the warm-up epochs in which only the plain backbone trains, on a tiny EfficientNet-B0 at 64 px
(the smallest input the attention grid's border mask leaves cells in)."""

import math

import cv2
import numpy as np
import pandas as pd
import pytest
import timm  # noqa: F401  (imported once here, not inside the first test)
import torch
import torch.nn.functional as F

from fairforge.detectors import create_detector
from fairforge.detectors.multi_attention import agda
from fairforge.runtime import load_checkpoint
from fairforge.seeding import rng_for
from fairforge.training.detector import TrainConfig, train_network, train_step

SIZE = 64
BACKBONE = "tf_efficientnet_b0"
# the modules of the attention model, which the warm-up leaves alone
HEADS = (
    "attention_generation.",
    "texture_enhance.",
    "projection_local.",
    "projection_final.",
    "ensemble_classifier_fc.",
)


def _images(n, size=SIZE, seed=0):
    return torch.from_numpy(rng_for("agda", seed).normal(0, 0.5, (n, 3, size, size))).float()


def _model(**kwargs):
    torch.manual_seed(0)
    return create_detector("multi_attention", input_size=SIZE, backbone=BACKBONE, **kwargs)


def _batch(seed=11):
    return {"image": _images(4), "label": torch.tensor([0, 1, 0, 1]), "seed": seed}


def _state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _changed(before, model):
    return {k for k, v in model.state_dict().items() if not torch.equal(before[k], v)}


def test_agda_changes_the_image_only_inside_the_attended_region_and_follows_its_seed():
    x = _images(2, 32)
    attentions = torch.zeros(2, 4, 6, 6)
    attentions[:, :, 2:4, 2:4] = torch.rand(2, 4, 2, 2, generator=torch.Generator().manual_seed(1))
    attentions[:, :, 2:4, 2:4] += 0.5
    out, index = agda(x, attentions, torch.Generator().manual_seed(5))
    assert out.shape == x.shape and index.shape == (2,) and ((index >= 0) & (index < 4)).all()
    region = F.interpolate(attentions, (32, 32), mode="bilinear", align_corners=True).sum(1) > 0
    outside = (~region).unsqueeze(1).expand_as(x)
    assert outside.any() and (~outside).any()
    assert torch.equal(out[outside], x[outside])  # untouched where no map attends
    assert (out - x)[~outside].abs().mean() > 0.05  # blurred, noisy inside
    again, index_again = agda(x, attentions, torch.Generator().manual_seed(5))
    assert torch.equal(again, out) and torch.equal(index_again, index)
    other, _ = agda(x, attentions, torch.Generator().manual_seed(6))
    assert not torch.equal(other, out)


def test_agda_on_the_model_s_own_maps_spares_the_border():
    """The attention maps are zero on the authors' border cells, so AGDA never touches the
    image's border: at 64 px the grid is 4 × 4 cells, and the mask (24 × 24, resized nearest)
    drops its first row and column, which the resized map keeps only at the first pixels."""
    model = _model().eval()
    x = _images(2)
    with torch.no_grad():
        model(x)
        attentions = model._outputs["attentions"]
        out, _ = agda(x, attentions, torch.Generator().manual_seed(3))
    assert attentions.shape[-2:] == (4, 4) and (attentions[..., 0, :] == 0).all()
    assert torch.equal(out[..., 0, :], x[..., 0, :]) and torch.equal(out[..., 0], x[..., 0])
    assert not torch.equal(out, x)


def test_warm_up_trains_the_plain_backbone_then_everything():
    model = _model(warmup_epochs=1).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    before = _state(model)
    model.on_epoch_start(1, 2)
    for seed in (1, 2):
        loss, parts = train_step(model, _batch(seed), opt)
        assert math.isfinite(loss) and set(parts) == {"loss"}  # the backbone head's BCE
    changed = _changed(before, model)
    assert {"warmup_head.weight", "warmup_head.bias", "backbone.conv_stem.weight"} <= changed
    assert all(k.startswith(("backbone.", "warmup_head.")) for k in changed), sorted(changed)
    assert model.centres is None  # no RIL in the warm-up

    before = _state(model)
    model.on_epoch_start(2, 2)
    for seed in (3, 4):
        loss, parts = train_step(model, _batch(seed), opt)
        assert math.isfinite(loss)
        assert set(parts) == {"bce", "ril", "agda_bce", "match"}
        assert all(math.isfinite(v) for v in parts.values()), parts
    changed = _changed(before, model)
    for head in HEADS:
        assert any(k.startswith(head) for k in changed), head
    assert "backbone.conv_stem.weight" in changed
    assert not any(k.startswith("warmup_head.") for k in changed)  # no gradient: Adam skips it


def test_auxiliary_losses_are_returned_finite_and_weighted():
    model = _model(ril_weight=0.5, agda_weight=2.0, match_weight=0.1).train()
    batch = _batch()
    terms = model.losses(model(batch["image"]), batch["label"], batch)
    assert set(terms) == {"bce", "ril", "agda_bce", "match"}
    assert all(torch.isfinite(t) and t.requires_grad for t in terms.values())
    assert float(terms["match"].detach()) > 0  # the kept attentions' features moved with the image
    assert model.loss_weights == {"ril": 0.5, "agda_bce": 2.0, "match": 0.1}
    no_agda = _model(agda_weight=0.0, match_weight=0.0).train()
    assert set(no_agda.losses(no_agda(batch["image"]), batch["label"], batch)) == {"bce", "ril"}
    no_agda.eval()
    with torch.no_grad():  # evaluation: no AGDA pass
        assert set(no_agda.losses(no_agda(batch["image"]), batch["label"])) == {"bce", "ril"}


def test_a_warm_up_as_long_as_training_and_bad_options_are_errors():
    with pytest.raises(ValueError, match="warmup_epochs=10 leaves none of the 10"):
        _model().on_epoch_start(1, 10)
    with pytest.raises(ValueError, match="odd"):
        _model(agda_kernel_size=4)
    with pytest.raises(ValueError, match="agda_threshold"):
        _model(agda_threshold=(0.6, 0.4))
    model = _model(warmup_epochs=0)
    model.on_epoch_start(1, 1)
    assert not model.warming_up


def test_a_checkpoint_without_the_warm_up_head_still_loads():
    """Weights saved before the warm-up head existed load; evaluation never uses the head."""
    model = _model().eval()
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("warmup_head.")}
    again = _model()
    again.load_state_dict(state)
    x = _images(2)
    with torch.no_grad():
        torch.testing.assert_close(again.eval()(x), model(x))
    with pytest.raises(RuntimeError, match="conv_stem"):
        again.load_state_dict({k: v for k, v in state.items() if "conv_stem" not in k})


def test_the_training_loop_warms_up_then_logs_every_loss(tmp_path):
    """train_network tells the model each epoch and seeds each batch: the warm-up epoch logs
    one loss, the next the four terms; the checkpoint rebuilds the model."""
    rng = np.random.default_rng(0)
    rows = []
    for split in ("train", "val"):
        for i in range(4):
            cv2.imwrite(str(tmp_path / f"{split}{i}.png"), rng.integers(0, 256, (64, 64, 3)))
            method = "faceswap" if i % 2 else "real"
            rows.append(
                {"sample_id": f"{split}{i}", "path": f"{split}{i}.png", "label": i % 2}
                | {"split": split, "method": method, "group": "g"}
            )
    cfg = TrainConfig(
        arch="multi_attention",
        input_size=SIZE,
        model={"backbone": BACKBONE, "warmup_epochs": 1},
        epochs=2,
        batch_size=4,
        device="cpu",
        precision="fp32",
        init="random",  # no ImageNet weights offline
    )
    log = train_network(pd.DataFrame(rows), tmp_path, cfg, tmp_path / "m.pt").set_index("epoch")
    terms = [f"train_loss_{name}" for name in ("bce", "ril", "agda_bce", "match")]
    assert log.loc[1, terms].isna().all() and np.isfinite(log.loc[1, "train_loss"])
    assert np.isfinite(log.loc[2, terms].astype(float)).all()
    model, meta = load_checkpoint(tmp_path / "m.pt")
    assert meta["model_config"]["warmup_epochs"] == 1 and not model.training
