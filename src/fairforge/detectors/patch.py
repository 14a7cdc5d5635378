"""Patch-based classifiers (Chai et al., "What makes fake images detectable?", ECCV 2020).

A classifier truncated early has a small receptive field, so each output location judges one
local patch. A 1×1 convolution turns the truncated features into a map of patch logits; every
patch is trained with the image's label (patch-level BCE) and the image score is the mean patch
logit.

``patch_resnet``: ResNet-18 through ``layer1`` (64 channels, stride 4).
``patch_xception``: Xception through block 2 (256 channels, stride 8).

Simplification: the paper averages patch *softmax* outputs, here the logits are averaged, which
keeps one logit per image and ranks the same way for confident patches. The truncated networks
start from ImageNet weights, as in the paper (``pretrained:``, or ``init: random``); the
training recipe (``recipe: patch_forensics`` or ``published``) is the Benchmark paper's.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.auxiliary import AuxiliaryLossDetector
from fairforge.detectors.base import (
    BENCHMARK_APP_A,
    BENCHMARK_TABLE_3,
    DETECTORS,
    IMAGENET_MEAN,
    IMAGENET_STD,
    PretrainedLayout,
    PretrainedTarget,
)
from fairforge.detectors.xception import (
    IMAGENET_XCEPTION,
    STEM,
    XCEPTION_TIMM,
    XCEPTION_TRUNK_RULES,
    xception_net,
)
from fairforge.recipes import Recipe, cited

_PATCH = "paper:Patch-Forensics (Chai et al. 2020)"
#: Patch-Forensics' training as the Benchmark paper restates it (App. A): batches of 16 real
#: and 16 fake images, Adam with its default parameters and learning rate; early stopping
#: on the validation set as the authors' code does.
PATCH_FORENSICS = Recipe(
    optimizer="adam",
    lr=1e-3,
    betas=(0.9, 0.999),
    batch_size=32,
    balanced_batches=True,
    epochs=50,
    patience=10,
    input_size=299,
    init="imagenet",
    source=BENCHMARK_APP_A,
    cite={
        **cited(
            BENCHMARK_APP_A,
            "optimizer",
            "batch_size",
            lr="Adam's default learning rate",
            betas="Adam's default parameters",
            balanced_batches="16 real and 16 fake images",
        ),
        **dict.fromkeys(
            ("epochs", "patience"),
            _PATCH + ", fairforge's reading (not stated in the Benchmark paper)",
        ),
        **cited(BENCHMARK_TABLE_3, input_size="2.10 and 3.34 GFLOPs: 299 px"),
        "init": _PATCH + ": truncated ImageNet-pretrained classifiers",
    },
)


class _PatchClassifier(AuxiliaryLossDetector):
    trunk: nn.Module
    classifier: nn.Module

    def patch_logits(self, x: torch.Tensor) -> torch.Tensor:
        """(B, 1, h, w) logits, one per patch."""
        return self.classifier(self.trunk(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        patches = self.patch_logits(x)
        return self._keep(patches.mean(dim=(1, 2, 3)), patches=patches)

    def loss(self, logits, labels, batch=None):
        patches = self._outputs_for(logits)["patches"]
        target = labels.float().view(-1, 1, 1, 1).expand_as(patches)
        return F.binary_cross_entropy_with_logits(patches, target)


@DETECTORS.register(
    "patch_resnet",
    recipe=PATCH_FORENSICS,
    recipe_name="patch_forensics",
    pretrained=PretrainedLayout(
        (
            PretrainedTarget(
                "trunk",
                ((r"^conv1\.", "0."), (r"^bn1\.", "1."), (r"^layer1\.", "4.")),
                partial=True,
            ),
        ),
        "ImageNet ResNet (timm/torchvision resnet18, or the configured backbone)",
        "resnet18.tv_in1k",
    ),
)
class PatchResNet(_PatchClassifier):
    default_input_size = 256
    mean = IMAGENET_MEAN
    std = IMAGENET_STD

    def __init__(self, input_size: int = 256, backbone: str = "resnet18"):
        super().__init__()
        self.input_size = input_size
        import timm  # see fairforge.detectors

        net = timm.create_model(backbone, pretrained=False)
        self.trunk = nn.Sequential(net.conv1, net.bn1, net.act1, net.maxpool, net.layer1)
        channels = next(i["num_chs"] for i in net.feature_info if i["module"] == "layer1")
        self.classifier = nn.Conv2d(channels, 1, 1)


@DETECTORS.register(
    "patch_xception",
    recipe=PATCH_FORENSICS,
    recipe_name="patch_forensics",
    pretrained=PretrainedLayout(
        (PretrainedTarget("trunk", XCEPTION_TRUNK_RULES, partial=True),),
        IMAGENET_XCEPTION,
        XCEPTION_TIMM,
    ),
)
class PatchXception(_PatchClassifier):
    default_input_size = 256

    def __init__(self, input_size: int = 256):
        super().__init__()
        self.input_size = input_size
        net = xception_net()
        self.trunk = nn.Sequential(*(getattr(net, n) for n in STEM + ("block1", "block2")))
        self.classifier = nn.Conv2d(256, 1, 1)
