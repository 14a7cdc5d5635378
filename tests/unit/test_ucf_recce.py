"""UCF and RECCE as DeepfakeBench builds them: losses through the shared training protocol,
parameter counts and checkpoint import against DeepfakeBench's state-dict layout.

``tests/data/deepfakebench/{ucf,recce}.json`` record the names and shapes of DeepfakeBench's
``UCFDetector`` and ``RecceDetector`` state dicts (built from its model code with the default
FF++ configs). The reference forwards below are test-side reconstructions of DeepfakeBench's
inference path, written from its code: UCF's fingerprint branch on timm's Xception (the same
parameter names), and RECCE with graph reasoning in DeepfakeBench's per-position loop.
"""

import json
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
import timm
import torch
import torch.nn.functional as F
from timm.models.xception import Block, SeparableConv2d
from torch import nn

from fairforge.detectors import create_detector
from fairforge.detectors.base import weighted_loss
from fairforge.detectors.deepfakebench import load_deepfakebench
from fairforge.detectors.recce import GraphReasoning, metric_learning_loss
from fairforge.runtime import load_checkpoint, read_checkpoint
from fairforge.seeding import derive_seed
from fairforge.training.detector import (
    TrainConfig,
    method_label_tensor,
    save_checkpoint,
    train_network,
)

DATA = Path(__file__).parents[1] / "data" / "deepfakebench"
SIZE = 64  # the smallest size whose UCF content map keeps 2×2 positions for AdaIN


def _layout(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _random_state(layout: dict, seed: int) -> dict:
    """A state dict in DeepfakeBench's names and shapes, with well-scaled random values."""
    g = torch.Generator().manual_seed(seed)
    state = {}
    for name, shape in layout["parameters"].items():
        if len(shape) >= 2:
            fan_in = int(np.prod(shape[1:]))
            value = torch.randn(shape, generator=g) / fan_in**0.5
        elif name.endswith(".weight"):  # BN scale
            value = 1.0 + 0.1 * torch.randn(shape, generator=g)
        else:
            value = 0.1 * torch.randn(shape, generator=g)
        state[name] = value
    for name, shape in layout["buffers"].items():
        if name.endswith("num_batches_tracked"):
            state[name] = torch.tensor(7)
        elif name.endswith("running_var"):
            state[name] = 0.5 + torch.rand(shape, generator=g)
        else:
            state[name] = 0.1 * torch.randn(shape, generator=g)
    return state


def _images(n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, 3, SIZE, SIZE, generator=g) * 2 - 1).float()


def _n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


# --- the loss interface ------------------------------------------------------------------------


def test_plain_detector_loss_is_its_single_term_untouched():
    torch.manual_seed(0)
    model = create_detector("meso4", input_size=SIZE).train()
    logits, labels = model(_images(4)), torch.tensor([0, 1, 0, 1])
    total, terms = weighted_loss(model, logits, labels)
    assert list(terms) == ["loss"]
    assert torch.equal(total, model.loss(logits, labels))


def test_ucf_terms_are_summed_with_the_configured_weights():
    torch.manual_seed(0)
    weights = {"common": 1.0, "specific": 0.5, "reconstruction": 2.0, "contrastive": 0.25}
    model = create_detector("ucf", input_size=SIZE, num_methods=3, loss_weights=weights).train()
    labels = torch.tensor([0, 1, 1, 0])
    batch = {"method_label": torch.tensor([0, 1, 2, 0])}
    total, terms = weighted_loss(model, model(_images(4)), labels, batch)
    assert set(terms) == set(weights)
    assert all(torch.isfinite(t) and float(t.detach()) > 0 for t in terms.values())
    expected = sum(weights[k] * float(t.detach()) for k, t in terms.items())
    assert float(total.detach()) == pytest.approx(expected, rel=1e-6)
    total.backward()  # every branch learns: both encoders, both heads, the decoder
    for part in ("encoder_f", "encoder_c", "head_spe", "head_sha", "con_gan"):
        grads = [p.grad for p in getattr(model, part).parameters() if p.grad is not None]
        assert grads and sum(float(g.abs().sum()) for g in grads) > 0, part


def test_ucf_specific_head_uses_the_method_labels():
    torch.manual_seed(0)
    model = create_detector("ucf", input_size=SIZE, num_methods=3).train()
    labels = torch.tensor([0, 1, 1, 0])
    logits = model(_images(4))
    out_spe = model._outputs["out_spe"]
    methods = torch.tensor([0, 2, 1, 0])
    terms = model.losses(logits, labels, {"method_label": methods})
    torch.testing.assert_close(terms["specific"], F.cross_entropy(out_spe, methods))
    model.eval()
    with torch.no_grad():
        logits = model(_images(4))
        terms = model.losses(logits, labels)
    assert list(terms) == ["common"]  # DeepfakeBench's test loss


def test_ucf_refuses_to_train_on_inputs_too_small_for_adain():
    model = create_detector("ucf", input_size=32, num_methods=2).train()
    x = torch.rand(2, 3, 32, 32) * 2 - 1  # Xception leaves a 1×1 map: no channel variance
    with pytest.raises(ValueError, match="at least 64 px"):
        model.losses(model(x), torch.tensor([0, 1]))


def test_method_labels_come_from_the_method_column():
    frame = pd.DataFrame({"method": ["real", "faceswap", "sbi", "real", "sbi"]})
    labels = method_label_tensor(frame, ["sbi", "faceswap"])
    assert labels.tolist() == [0, 2, 1, 0, 1]


def test_recce_reconstruction_and_metric_losses():
    torch.manual_seed(0)
    model = create_detector("recce", input_size=SIZE).train()
    x, labels = _images(4), torch.tensor([0, 1, 0, 1])
    logits = model(x)
    out = model._outputs
    assert out["recon"].shape == x.shape
    terms = model.losses(logits, labels)
    expected = (out["recon"][[0, 2]] - x[[0, 2]]).abs().mean()
    torch.testing.assert_close(terms["reconstruction"], expected)
    # the metric loss: 1 − real–real + real–fake similarity, per level, floored at 0
    sim = torch.tensor([[1.0, 0.2, 0.9, 0.4], [0.2, 1.0, 0.3, 0.8]])
    sim = torch.cat([sim, sim.flip(0)])  # rows: real, fake, real, fake
    sim = (sim + sim.T) / 2
    same, diff = float(sim[0, 2]), float(sim[[0, 0, 2, 2], [1, 3, 1, 3]].mean())
    got = metric_learning_loss([sim], labels)
    assert float(got) == pytest.approx(max(0.0, 1 - same + diff), abs=1e-5)
    assert float(metric_learning_loss([torch.ones(4, 4)], labels)) == pytest.approx(1.0, abs=1e-5)


# --- parameters ---------------------------------------------------------------------------------


def test_parameter_counts_match_deepfakebench():
    ucf = create_detector("ucf", input_size=256)
    assert _n_params(ucf) == _layout("ucf")["parameter_count"]  # 46.84M, module for module
    # RECCE: DeepfakeBench's detector also holds an unused second Xception (``backbone.``) and
    # the encoder's ImageNet classifier; compare what its forward pass uses.
    recce_layout = _layout("recce")
    used = sum(
        int(np.prod(shape))
        for name, shape in recce_layout["parameters"].items()
        if name.startswith("model.") and not name.startswith("model.encoder.fc.")
    )
    ours = _n_params(create_detector("recce", input_size=256))
    assert abs(ours - used) / used < 0.02  # 23.78M each; the head is 1 logit instead of 2


# --- graph reasoning: vectorised = DeepfakeBench's loop ---------------------------------------


def _graph_reasoning_loop(m: GraphReasoning, a, b, c):
    """DeepfakeBench's per-position formulation of the same module."""
    emb_a = m.va_embedding(a).flatten(2)
    gate_b = (1 - m.va_gated_b(a)).flatten(2)
    gate_c = (1 - m.va_gated_c(a)).flatten(2)
    r0, r1 = m.ratio
    vb = F.unfold(b, r0, stride=r0).reshape(b.shape[0], b.shape[1], r0 * r0, -1)
    vc = F.unfold(c, r1, stride=r1).reshape(c.shape[0], c.shape[1], r1 * r1, -1)
    eb, ec = m.vb_embedding(vb.permute(0, 2, 3, 1)), m.vc_embedding(vc.permute(0, 2, 3, 1))
    agg_b, agg_c = [], []
    for j in range(emb_a.shape[-1]):
        va = torch.stack([emb_a[:, :, j]] * (r0 * r0), dim=1)
        w = m.reweight_ab(torch.cat([va, eb[:, :, j, :]], dim=-1))
        agg_b.append(torch.bmm(eb[:, :, j, :].transpose(1, 2), w)[..., 0] * gate_b[:, :, j])
        va = torch.stack([emb_a[:, :, j]] * (r1 * r1), dim=1)
        w = m.reweight_ac(torch.cat([va, ec[:, :, j, :]], dim=-1))
        agg_c.append(torch.bmm(ec[:, :, j, :].transpose(1, 2), w)[..., 0] * gate_c[:, :, j])
    abc = torch.cat([torch.stack(agg_b, -1), torch.stack(agg_c, -1), emb_a], dim=1)
    return m.reproject(torch.sigmoid(abc).reshape(a.shape[0], -1, *a.shape[-2:]))


def test_graph_reasoning_equals_the_per_position_loop():
    torch.manual_seed(0)
    m = GraphReasoning(16, 8, 12, 8, 6, 8, (2, 4), drop_rate=0.2).eval()
    a, b, c = torch.randn(2, 16, 3, 3), torch.randn(2, 12, 6, 6), torch.randn(2, 6, 12, 12)
    with torch.no_grad():
        torch.testing.assert_close(m(a, b, c), _graph_reasoning_loop(m, a, b, c))


# --- DeepfakeBench checkpoints -------------------------------------------------------------------


def _bn(x, state, prefix):
    return F.batch_norm(
        x,
        state[f"{prefix}.running_mean"],
        state[f"{prefix}.running_var"],
        state[f"{prefix}.weight"],
        state[f"{prefix}.bias"],
    )


def _timm_xception(state: dict, prefix: str, num_classes: int, fc: str) -> nn.Module:
    """timm's Xception (DeepfakeBench's parameter names) loaded from ``prefix``-ed keys."""
    net = timm.create_model("legacy_xception", pretrained=False, num_classes=num_classes)
    sub = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
    sub = {
        k.replace(f"{fc}.", "fc.", 1) if k.startswith(f"{fc}.") else k: v for k, v in sub.items()
    }
    sub = {k: v for k, v in sub.items() if not k.startswith("adjust_channel.")}
    net.load_state_dict(sub)
    return net.eval()


@torch.no_grad()
def _dfb_ucf_reference(state: dict, x: torch.Tensor) -> torch.Tensor:
    """DeepfakeBench UCF inference: encoder_f.features (to bn4, then adjust_channel),
    block_sha, head_sha, softmax probability of class 1."""
    net = _timm_xception(state, "encoder_f.", 2, "last_linear")
    f = net.act2(net.bn2(net.conv2(net.act1(net.bn1(net.conv1(x))))))
    for i in range(1, 13):
        f = getattr(net, f"block{i}")(f)
    f = net.bn4(net.conv4(net.act3(net.bn3(net.conv3(f)))))  # no ReLU before adjust_channel
    p = "encoder_f.adjust_channel"
    f = F.relu(_bn(F.conv2d(f, state[f"{p}.0.weight"], state[f"{p}.0.bias"]), state, f"{p}.1"))
    for i in (0, 2, 4):
        f = F.conv2d(f, state[f"block_sha.conv2d.{i}.weight"], state[f"block_sha.conv2d.{i}.bias"])
        if i < 4:
            f = F.leaky_relu(f)
    h = f.mean(dim=(2, 3))
    h = F.leaky_relu(F.linear(h, state["head_sha.mlp.0.weight"], state["head_sha.mlp.0.bias"]))
    out = F.linear(h, state["head_sha.mlp.2.weight"], state["head_sha.mlp.2.bias"])
    return out.softmax(dim=1)[:, 1]


def test_deepfakebench_ucf_checkpoint_loads_every_key_and_gives_its_outputs():
    layout = _layout("ucf")
    state = _random_state(layout, seed=1)
    model = load_deepfakebench(state, "ucf", input_size=SIZE)  # raises on any unmatched key
    assert set(model.state_dict()) == set(state) - {k for k in state if ".last_linear." in k} | {
        k.replace(".last_linear.", ".fc.") for k in state if ".last_linear." in k
    }
    x = _images(3, seed=2)
    with torch.no_grad():
        ours = torch.sigmoid(model(x))
    torch.testing.assert_close(ours, _dfb_ucf_reference(state, x), atol=1e-5, rtol=0)


class _DFBRecce(nn.Module):
    """Test-side reconstruction of DeepfakeBench's ``Recce`` (inference), in its names."""

    def __init__(self):
        super().__init__()
        self.encoder = timm.create_model("legacy_xception", pretrained=False, num_classes=1000)
        self.fc = nn.Linear(2048, 2)
        self.attention = nn.Module()
        self.attention.gated = nn.Sequential(
            nn.Conv2d(3, 3, 3, padding=1, bias=False),
            nn.ReLU(True),
            nn.Conv2d(3, 1, 1, bias=False),
            nn.Sigmoid(),
        )
        self.attention.h = nn.Sequential(
            nn.Conv2d(728, 728, 1, bias=False), nn.BatchNorm2d(728), nn.ReLU(True)
        )
        self.reasoning = GraphReasoning(728, 256, 256, 256, 128, 256, (2, 4), 0.2)

        def up(cin, cout):
            return nn.Sequential(
                nn.UpsamplingNearest2d(scale_factor=2),
                SeparableConv2d(cin, cout, 3, 1, 1),
                nn.BatchNorm2d(cout),
                nn.ReLU(inplace=True),
            )

        self.decoder1, self.decoder2 = up(728, 256), Block(256, 256, 3, 1)
        self.decoder3, self.decoder4 = up(256, 128), Block(128, 128, 3, 1)
        self.decoder5 = up(128, 64)
        self.decoder6 = nn.Sequential(nn.Conv2d(64, 3, 1, 1, bias=False), nn.Tanh())

    @torch.no_grad()
    def prob(self, x):
        e = self.encoder
        out = e.act2(e.bn2(e.conv2(e.act1(e.bn1(e.conv1(x))))))
        emb = e.block4(e.block3(e.block2(e.block1(out))))
        d2 = self.decoder2(self.decoder1(emb))
        d4 = self.decoder4(self.decoder3(d2))
        recon = F.interpolate(
            self.decoder6(self.decoder5(d4)), size=x.shape[-2:], mode="bilinear", align_corners=True
        )
        emb = e.block7(e.block6(e.block5(emb)))
        emb = e.block8(_graph_reasoning_loop(self.reasoning, emb, d2, d4) + emb)
        res = F.interpolate((x - recon).abs(), emb.shape[-2:], mode="bilinear", align_corners=True)
        emb = self.attention.gated(res) * self.attention.h(emb) + emb
        for i in (9, 10, 11, 12):
            emb = getattr(e, f"block{i}")(emb)
        emb = e.act4(e.bn4(e.conv4(e.act3(e.bn3(e.conv3(emb))))))
        return self.fc(emb.mean(dim=(2, 3))).softmax(dim=1)[:, 1]


def test_deepfakebench_recce_checkpoint_loads_every_key_and_gives_its_outputs():
    layout = _layout("recce")
    state = _random_state(layout, seed=3)
    model = load_deepfakebench(state, "recce", input_size=SIZE)  # raises on any unmatched key
    reference = _DFBRecce().eval()
    reference.load_state_dict(  # strict: the recorded layout is exactly this network's
        {k[len("model.") :]: v for k, v in state.items() if k.startswith("model.")}
    )
    x = _images(2, seed=4)
    with torch.no_grad():
        ours = torch.sigmoid(model(x))
    torch.testing.assert_close(ours, reference.prob(x), atol=1e-5, rtol=0)


# --- the shared training loop ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_method_samples(tmp_path_factory):
    root = tmp_path_factory.mktemp("ucf_recce")
    rng = np.random.default_rng(0)
    rows = []
    methods = ["real", "faceswap", "real", "sbi"]
    for split in ("train", "val"):
        for i in range(8):
            cv2.imwrite(str(root / f"{split}{i}.png"), rng.integers(0, 256, (48, 48, 3), np.uint8))
            method = methods[i % 4]
            rows.append(
                {
                    "sample_id": f"{split}{i}",
                    "path": f"{split}{i}.png",
                    "label": int(method != "real"),
                    "method": method,
                    "split": split,
                    "group": "g",
                }
            )
    return pd.DataFrame(rows), root


@pytest.mark.parametrize(
    "arch,terms",
    [
        ("ucf", ["common", "specific", "reconstruction", "contrastive"]),
        ("recce", ["cls", "reconstruction", "metric"]),
    ],
)
def test_training_step_through_the_shared_loop(arch, terms, two_method_samples, tmp_path):
    samples, root = two_method_samples
    cfg = TrainConfig(
        arch=arch,
        input_size=SIZE,
        train_methods=["faceswap", "sbi"],
        epochs=1,
        batch_size=8,
        device="cpu",
        init="random",  # no ImageNet Xception offline
    )
    path = tmp_path / "model.pt"
    log = train_network(samples, root, cfg, path)
    for name in terms:  # every auxiliary loss is logged, finite
        assert np.isfinite(log[f"train_loss_{name}"]).all(), name
    torch.manual_seed(derive_seed(cfg.seed, "init", arch))
    kwargs = {"num_methods": 3} if arch == "ucf" else {}
    init = create_detector(arch, input_size=SIZE, **kwargs).state_dict()
    trained = read_checkpoint(path)
    if arch == "ucf":
        assert trained["model_config"]["num_methods"] == 3  # real + faceswap + sbi
    state = trained["state_dict"]
    changed = [k for k, v in init.items() if v.is_floating_point() and not torch.equal(v, state[k])]
    assert len(changed) > len(init) // 2
    # checkpoint round trip: the loaded model re-saved and re-loaded scores the same
    model, _ = load_checkpoint(path)
    x = _images(2, seed=5)
    with torch.no_grad():
        first = model(x)
    save_checkpoint(tmp_path / "again.pt", model, cfg, trained["model_config"], SIZE, 1, 0.5)
    with torch.no_grad():
        torch.testing.assert_close(load_checkpoint(tmp_path / "again.pt")[0](x), first)
