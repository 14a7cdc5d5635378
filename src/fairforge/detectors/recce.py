"""RECCE: end-to-end reconstruction-classification learning (Cao et al., CVPR 2022), as
DeepfakeBench builds the network.

An Xception encoder (stem, entry flow and ``block4``) feeds a decoder that reconstructs the
image (three ×2 nearest upsamplings, separable convolutions and Xception blocks, tanh output,
resized to the input); the classification branch continues through ``block5``–``block7``,
where a **graph reasoning** block fuses the encoder map with the decoder's two intermediate
maps (each encoder position is a vertex connected to its 2×2 and 4×4 decoder patches; edge
weights from a softmax over the patch, gated by the encoder features, re-projected to 728
channels and added back), then ``block8``, then the **reconstruction-guided attention**
(the |x − x̂| residual, resized to the feature map and turned into a gate, re-weights the
features: gate · h(f) + dropout(f)), then ``block9``–``block12`` and the exit flow. This is the
paper's placement (reasoning before, attention after the middle of the middle flow), not after
the entry flow.

Training losses (:meth:`RECCE.losses`, summed by the training loop with ``loss_weights``; the
paper's λ₁ = λ₂ = 0.1):

``cls``
    binary cross-entropy (DeepfakeBench's two-class softmax head is one logit here,
    fake − real);
``reconstruction``
    mean L1 between the reconstruction and the image over the *real* images of the batch;
``metric``
    the paper's metric-learning loss on the normalised pooled embeddings of the encoder and
    both decoder stages: for each, max(0, 1 − mean similarity of real–real pairs + mean
    similarity of real–fake pairs), similarities mapped to [0, 1].

DeepfakeBench trains RECCE with the cross-entropy alone; the auxiliary losses follow the paper.
In training, as in both implementations, half of the images get white noise (σ = 1e-6) before
the encoder, drawn from torch's generator (seeded by the training loop). The paper starts from
an ImageNet Xception (``pretrained:``, or ``init: random`` to train without).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.auxiliary import AuxiliaryLossDetector
from fairforge.detectors.base import (
    DETECTORS,
    DeepfakeBenchLayout,
    PretrainedLayout,
    PretrainedTarget,
    stated_start,
    weighted_loss,
)
from fairforge.detectors.xception import (
    IMAGENET_XCEPTION,
    STEM,
    XCEPTION_TIMM,
    run_stages,
    xception_net,
)

#: DeepfakeBench ``RecceDetector`` state-dict names → ours (regex, replacement). Its
#: ``backbone.*`` (a second Xception the detector builds but never runs) and the encoder's
#: ImageNet classifier ``model.encoder.fc`` are not part of RECCE's computation
#: (:data:`DEEPFAKEBENCH_IGNORE`); every ``model.`` name maps to ours without the prefix.
DEEPFAKEBENCH_RULES = ((r"^model\.(.+)$", r"\1"),)
DEEPFAKEBENCH_IGNORE = (r"^backbone\.", r"^model\.encoder\.fc\.")
DEEPFAKEBENCH_HEAD = "fc"

DEFAULT_LOSS_WEIGHTS = {"cls": 1.0, "reconstruction": 0.1, "metric": 0.1}


def _up_block(cin: int, cout: int) -> nn.Sequential:
    from timm.models.xception import SeparableConv2d  # see fairforge.detectors

    return nn.Sequential(
        nn.UpsamplingNearest2d(scale_factor=2),
        SeparableConv2d(cin, cout, 3, 1, 1),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class GraphReasoning(nn.Module):
    """Graph reasoning between the encoder map ``a`` (vertices) and the decoder maps ``b``, ``c``
    (``ratio[k]``² sub-vertices per vertex): DeepfakeBench's module, vectorised over positions."""

    def __init__(self, va_in, va_out, vb_in, vb_out, vc_in, vc_out, ratio=(2, 4), drop_rate=0.2):
        super().__init__()
        self.ratio = tuple(ratio)
        self.va_embedding = nn.Sequential(
            nn.Conv2d(va_in, va_out, 1, bias=False),
            nn.ReLU(True),
            nn.Conv2d(va_out, va_out, 1, bias=False),
        )
        self.va_gated_b = nn.Sequential(nn.Conv2d(va_in, va_out, 1, bias=False), nn.Sigmoid())
        self.va_gated_c = nn.Sequential(nn.Conv2d(va_in, va_out, 1, bias=False), nn.Sigmoid())
        self.vb_embedding = nn.Sequential(
            nn.Linear(vb_in, vb_out, bias=False),
            nn.ReLU(True),
            nn.Linear(vb_out, vb_out, bias=False),
        )
        self.vc_embedding = nn.Sequential(
            nn.Linear(vc_in, vc_out, bias=False),
            nn.ReLU(True),
            nn.Linear(vc_out, vc_out, bias=False),
        )
        self.reweight_ab = nn.Sequential(
            nn.Linear(va_out + vb_out, 1, bias=False), nn.ReLU(True), nn.Softmax(dim=1)
        )
        self.reweight_ac = nn.Sequential(
            nn.Linear(va_out + vc_out, 1, bias=False), nn.ReLU(True), nn.Softmax(dim=1)
        )
        self.reproject = nn.Sequential(
            nn.Conv2d(va_out + vb_out + vc_out, va_in, kernel_size=1, bias=False),
            nn.ReLU(True),
            nn.Conv2d(va_in, va_in, kernel_size=1, bias=False),
            nn.Dropout(drop_rate),
        )

    @staticmethod
    def _aggregate(emb_a, vert, k, embed, reweight, gate):
        """(B, C, N): each vertex's sub-vertices, embedded, softmax-weighted and gated."""
        b, c = vert.shape[:2]
        sub = F.unfold(vert, kernel_size=k, stride=k).reshape(b, c, k * k, -1)
        sub = embed(sub.permute(0, 2, 3, 1))  # (B, k², N, C')
        a = emb_a.transpose(1, 2).unsqueeze(1).expand(-1, k * k, -1, -1)
        w = reweight(torch.cat((a, sub), dim=-1))  # (B, k², N, 1), softmax over the k²
        return (sub * w).sum(dim=1).transpose(1, 2) * gate

    def forward(self, vert_a, vert_b, vert_c):
        b, _, h, w = vert_a.shape
        emb_a = self.va_embedding(vert_a).flatten(2)  # (B, C, N)
        gate_b = (1 - self.va_gated_b(vert_a)).flatten(2)
        gate_c = (1 - self.va_gated_c(vert_a)).flatten(2)
        agg_b = self._aggregate(
            emb_a, vert_b, self.ratio[0], self.vb_embedding, self.reweight_ab, gate_b
        )
        agg_c = self._aggregate(
            emb_a, vert_c, self.ratio[1], self.vc_embedding, self.reweight_ac, gate_c
        )
        fused = torch.sigmoid(torch.cat((agg_b, agg_c, emb_a), dim=1))
        return self.reproject(fused.reshape(b, -1, h, w))


class GuidedAttention(nn.Module):
    """Reconstruction-guided attention: gate(|x − x̂|) · h(f) + dropout(f)."""

    def __init__(self, depth: int = 728, drop_rate: float = 0.2):
        super().__init__()
        self.gated = nn.Sequential(
            nn.Conv2d(3, 3, 3, padding=1, bias=False),
            nn.ReLU(True),
            nn.Conv2d(3, 1, 1, bias=False),
            nn.Sigmoid(),
        )
        self.h = nn.Sequential(
            nn.Conv2d(depth, depth, 1, bias=False), nn.BatchNorm2d(depth), nn.ReLU(True)
        )
        self.dropout = nn.Dropout(drop_rate)

    def forward(self, x, recon, f):
        residual = F.interpolate(
            (x - recon).abs(), size=f.shape[-2:], mode="bilinear", align_corners=True
        )
        return self.gated(residual) * self.h(f) + self.dropout(f)


def _similarities(f: torch.Tensor) -> torch.Tensor:
    """(B, B) cosine similarities of the pooled embeddings, mapped to [0, 1]."""
    z = F.normalize(f.mean(dim=(2, 3)), p=2, dim=1)
    return (z @ z.T + 1.0) / 2.0


def metric_learning_loss(similarities, labels: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RECCE's metric loss: per similarity matrix, max(0, 1 − mean real–real similarity (other
    images) + mean real–fake similarity); summed over the matrices."""
    fake = labels.bool()
    n = len(labels)
    differ = (fake[:, None] ^ fake[None, :]).float()
    eye = torch.eye(n, dtype=torch.bool, device=labels.device)
    both_real = (~(fake[:, None] | fake[None, :]) & ~eye).float()
    total = similarities[0].new_zeros(())
    for sim in similarities:
        diff = (sim * differ).sum() / (differ.sum() + eps)
        same = (sim * both_real).sum() / (both_real.sum() + eps)
        total = total + (1.0 - same + diff).clamp_min(0.0)
    return total


def real_reconstruction_l1(
    recon: torch.Tensor, x: torch.Tensor, labels: torch.Tensor
) -> torch.Tensor:
    """Mean absolute reconstruction error over the real images (0 when the batch has none)."""
    real = (labels == 0).to(x.dtype)
    per_image = (recon - x).abs().flatten(1).mean(dim=1)
    return (per_image * real).sum() / real.sum().clamp_min(1.0)


@DETECTORS.register(
    "recce",
    recipe=stated_start("imagenet", "paper:RECCE (Cao et al. 2022): ImageNet-pretrained Xception"),
    # its encoder is the whole ImageNet Xception, as DeepfakeBench's Recce builds it
    pretrained=PretrainedLayout((PretrainedTarget("encoder"),), IMAGENET_XCEPTION, XCEPTION_TIMM),
    deepfakebench={
        "recce": DeepfakeBenchLayout(
            DEEPFAKEBENCH_RULES, DEEPFAKEBENCH_IGNORE, head=DEEPFAKEBENCH_HEAD
        )
    },
)
class RECCE(AuxiliaryLossDetector):
    default_input_size = 256

    def __init__(
        self,
        input_size: int = 256,
        drop_rate: float = 0.2,
        noise_std: float = 1e-6,
        loss_weights: dict | None = None,
    ):
        super().__init__()
        self.input_size = input_size
        self.noise_std = noise_std
        self.loss_weights = {**DEFAULT_LOSS_WEIGHTS, **(loss_weights or {})}
        self.encoder = xception_net(num_classes=0)  # its classifier is never used
        self.fc = nn.Linear(2048, 1)
        self.dropout = nn.Dropout(drop_rate)
        self.attention = GuidedAttention(728, drop_rate)
        self.reasoning = GraphReasoning(728, 256, 256, 256, 128, 256, (2, 4), drop_rate)
        from timm.models.xception import Block  # see fairforge.detectors

        self.decoder1 = _up_block(728, 256)
        self.decoder2 = Block(256, 256, 3, 1)
        self.decoder3 = _up_block(256, 128)
        self.decoder4 = Block(128, 128, 3, 1)
        self.decoder5 = _up_block(128, 64)
        self.decoder6 = nn.Sequential(nn.Conv2d(64, 3, 1, 1, bias=False), nn.Tanh())

    def _noisy(self, x: torch.Tensor) -> torch.Tensor:
        pick = (torch.rand(x.shape[0], 1, 1, 1) > 0.5).to(x.device, x.dtype)
        noise = torch.randn(x.shape, device=x.device, dtype=x.dtype) * self.noise_std
        return (x + noise * pick).clamp(-1.0, 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        enc = self.encoder
        inp = self._noisy(x) if self.training else x
        embedding = run_stages(enc, inp, (*STEM, "block1", "block2", "block3", "block4"))
        out_d2 = self.decoder2(self.decoder1(self.dropout(embedding)))
        out_d4 = self.decoder4(self.decoder3(out_d2))
        recon = self.decoder6(self.decoder5(out_d4))
        recon = F.interpolate(recon, size=x.shape[-2:], mode="bilinear", align_corners=True)
        f = run_stages(enc, embedding, ("block5", "block6", "block7"))
        f = enc.block8(self.reasoning(f, out_d2, out_d4) + f)
        f = self.attention(x, recon, f)
        f = run_stages(
            enc,
            f,
            ("block9", "block10", "block11", "block12", "conv3", "bn3", "act3")
            + ("conv4", "bn4", "act4"),
        )
        logits = self.fc(self.dropout(f.mean(dim=(2, 3)))).squeeze(1)
        if not self.training:
            return self._keep(logits)
        sims = [_similarities(m) for m in (embedding, out_d2, out_d4)]
        return self._keep(logits, recon=recon, image=x, similarities=sims)

    def losses(self, logits, labels, batch=None) -> dict[str, torch.Tensor]:
        out = self._outputs_for(logits)
        cls = F.binary_cross_entropy_with_logits(logits, labels.float())
        if "recon" not in out:  # eval mode: the classification loss
            return {"cls": cls}
        return {
            "cls": cls,
            "reconstruction": real_reconstruction_l1(out["recon"], out["image"], labels),
            "metric": metric_learning_loss(out["similarities"], labels),
        }

    def loss(self, logits, labels, batch=None):
        """The weighted sum of :meth:`losses` (what the training loop minimises)."""
        return weighted_loss(self, logits, labels, batch)[0]
