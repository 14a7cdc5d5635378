"""Capsule-Forensics (Nguyen, Yamagishi & Echizen, ICASSP 2019; v2 architecture).

VGG-19 up to its third max-pooling (256 channels at stride 8) feeds ten primary capsules; each
is conv-BN-ReLU ×2, statistical pooling (per-channel mean and standard deviation) and two 1-D
convolutions, giving an 8-d vector that is squashed. Dynamic routing (2 iterations) maps them to
two 4-d output capsules (real, fake). As in the paper, each output dimension votes with a
softmax over the two capsules and the image probability is the mean vote; the loss is the
cross-entropy of every dimension's vote.

As published (the authors' code, which DeepfakeBench's ``capsule_net`` reproduces): the VGG-19
part is a frozen feature extractor (``freeze_vgg``, default on: its parameters get no
gradient, only the capsules and the routing train); the primary capsules are stacked as
(B, 8, 10) and squashed over the last axis, i.e. across the ten capsules for each of the 8
dimensions (that is what the published code does, not a per-capsule squash); inputs are
normalised with mean = std = 0.5. DeepfakeBench checkpoints load and give its outputs
(:mod:`fairforge.detectors.deepfakebench`).

Simplifications: VGG starts from random weights unless ImageNet weights are loaded (the paper
uses ImageNet weights); the training-time noise on the routing weights and the routing
dropout are left out.

``output`` picks the score (sigmoid of the logit returned):

``"paper"`` (default)
    the mean fake vote m, the paper's probability: the logit is logit(m);
``"deepfakebench"``
    DeepfakeBench's ``prob``, a softmax over the mean class votes (1 − m, m): sigmoid(2m − 1),
    the logit 2m − 1.

Both rank images alike and agree at 0.5 (m > 0.5 ⇔ 2m − 1 > 0), so AUC and decisions at 0.5
are the same; the probabilities differ (DeepfakeBench's lie in [0.27, 0.73]). The default stays
the paper's whatever the weights' origin, so a capsule's scores mean one thing in every table;
an imported DeepfakeBench checkpoint reproduces DeepfakeBench's probabilities with
``model: {output: deepfakebench}``.
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
)

# VGG-19's `features` (configuration "E" of Simonyan & Zisserman, 2015; torchvision's and
# timm's `cfgs["vgg19"]`): channels of each 3x3 convolution, "M" a 2x2 max-pooling. Kept here
# because importing timm for it costs every Capsule job seconds (timm pulls in torchvision).
VGG19_FEATURES = (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M")
VGG19_FEATURES += (512, 512, 512, 512, "M", 512, 512, 512, 512, "M")


def vgg19_head_layers(n_pools: int = 3) -> nn.Sequential:
    """torchvision/timm VGG-19 ``features`` up to its ``n_pools``-th max-pooling (same names,
    so the first 19 layers of an ImageNet VGG-19 state dict load onto it)."""
    layers, cin, pools = [], 3, 0
    for v in VGG19_FEATURES:
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
            pools += 1
            if pools == n_pools:
                break
        else:
            conv = nn.Conv2d(cin, v, 3, padding=1)
            nn.init.kaiming_normal_(conv.weight, mode="fan_out", nonlinearity="relu")
            nn.init.zeros_(conv.bias)  # torchvision's and timm's VGG initialisation
            layers += [conv, nn.ReLU(inplace=True)]
            cin = v
    return nn.Sequential(*layers)


def squash(x: torch.Tensor, dim: int) -> torch.Tensor:
    sq = (x * x).sum(dim=dim, keepdim=True)
    return sq / (1.0 + sq) * x / torch.sqrt(sq + 1e-12)


class _StatsPool(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.flatten(2)
        return torch.stack((flat.mean(2), flat.std(2)), dim=1)  # (B, 2, C)


def _primary_capsule(cin: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, 64, 3, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU(inplace=True),
        nn.Conv2d(64, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(inplace=True),
        _StatsPool(),
        nn.Conv1d(2, 8, 5, stride=2, padding=2),
        nn.BatchNorm1d(8),
        nn.Conv1d(8, 1, 3, padding=1),
        nn.BatchNorm1d(1),
        nn.Flatten(),  # (B, 8)
    )


class DynamicRouting(nn.Module):
    """Routing-by-agreement from ``n_in`` capsules of ``d_in`` to ``n_out`` of ``d_out``."""

    def __init__(self, n_in: int, n_out: int, d_in: int, d_out: int, iterations: int = 2):
        super().__init__()
        self.iterations = iterations
        self.route_weights = nn.Parameter(torch.randn(n_out, n_in, d_out, d_in))

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        # u: (B, n_in, d_in) → priors (B, n_out, n_in, d_out)
        priors = torch.einsum("oidk,bik->boid", self.route_weights, u)
        logits = torch.zeros_like(priors)
        for i in range(self.iterations):
            probs = F.softmax(logits, dim=2)
            outputs = squash((probs * priors).sum(dim=2, keepdim=True), dim=3)
            if i < self.iterations - 1:
                logits = logits + priors * outputs
        return outputs.squeeze(2)  # (B, n_out, d_out)


#: the score conventions of ``output``
OUTPUTS = ("paper", "deepfakebench")


_CAPSULE_DFB = DeepfakeBenchLayout(
    (
        (r"^vgg_ext\.vgg_1\.(.+)$", r"vgg.\1"),
        (r"^fea_ext\.capsules\.(.+)$", r"capsules.\1"),
        (r"^routing_stats\.route_weights$", "routing.route_weights"),
    )
)


@DETECTORS.register(
    "capsule",
    recipe=stated_start(
        "imagenet", "paper:Capsule-Forensics (Nguyen et al. 2019): ImageNet-pretrained VGG-19"
    ),
    pretrained=PretrainedLayout(
        (PretrainedTarget("vgg", ((r"^features\.", ""),), partial=True),),
        "ImageNet VGG-19 (torchvision vgg19 or timm vgg19)",
        "vgg19.tv_in1k",
    ),
    deepfakebench={"capsule_net": _CAPSULE_DFB, "capsule": _CAPSULE_DFB},
)
class CapsuleForensics(AuxiliaryLossDetector):
    default_input_size = 256
    mean = (0.5, 0.5, 0.5)
    std = (0.5, 0.5, 0.5)

    def __init__(
        self,
        input_size: int = 256,
        n_capsules: int = 10,
        routing_iterations: int = 2,
        freeze_vgg: bool = True,
        output: str = "paper",
    ):
        super().__init__()
        if output not in OUTPUTS:
            raise ValueError(f"capsule model.output must be one of {OUTPUTS}, got {output!r}")
        self.input_size = input_size
        self.output = output
        self.vgg = vgg19_head_layers(3)
        self.vgg.requires_grad_(not freeze_vgg)
        self.capsules = nn.ModuleList(_primary_capsule(256) for _ in range(n_capsules))
        self.routing = DynamicRouting(n_capsules, 2, 8, 4, routing_iterations)
        for m in self.capsules.modules():  # the paper's initialisation
            if isinstance(m, (nn.Conv2d, nn.Conv1d)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            elif isinstance(m, (nn.BatchNorm2d, nn.BatchNorm1d)):
                nn.init.normal_(m.weight, 1.0, 0.02)
                nn.init.zeros_(m.bias)

    def _primary(self, x: torch.Tensor) -> torch.Tensor:
        """The primary capsules, (B, 8, n_capsules)."""
        feats = self.vgg(x)
        return squash(torch.stack([c(feats) for c in self.capsules], dim=-1), dim=-1)

    def penultimate(self, x: torch.Tensor) -> torch.Tensor:
        """The primary capsules that the routing (the final layer) reads, (B, 8·n_capsules):
        what :meth:`Detector.penultimate` takes of a linear head."""
        return self._primary(x).transpose(1, 2).flatten(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        primary = self._primary(x)
        out = self.routing(primary.transpose(1, 2))  # (B, 2, 4): (real, fake) × dims
        votes = out[:, 1, :] - out[:, 0, :]  # per-dimension fake-vs-real logits
        p_fake = torch.sigmoid(votes).mean(dim=1)  # the mean vote m
        if self.output == "deepfakebench":  # softmax over (1 − m, m): sigmoid(2m − 1)
            return self._keep(2.0 * p_fake - 1.0, votes=votes)
        return self._keep(torch.logit(p_fake.clamp(1e-6, 1 - 1e-6)), votes=votes)

    def loss(self, logits, labels, batch=None):
        votes = self._outputs_for(logits)["votes"]
        target = labels.float()[:, None].expand_as(votes)
        return F.binary_cross_entropy_with_logits(votes, target)
