"""Xception (Chollet, CVPR 2017) as the FaceForensics++ baseline (Rössler et al., ICCV 2019).

The network is timm's ``legacy_xception`` (the Cadene/FaceForensics++ port that DeepfakeBench
also uses, with identical parameter names) with a single-logit head, so DeepfakeBench
checkpoints load onto it (:mod:`fairforge.detectors.deepfakebench`). The network is built with
random weights (``pretrained=False``, nothing is downloaded); the papers start from ImageNet
weights, so training asks for them (``pretrained:``) unless the config says ``init: random``
(:mod:`fairforge.detectors.pretrained`). The network is size-agnostic: 64 px inputs reach the
exit flow as 2×2 maps.

The stage helpers below let the Xception-based detectors (FFD, RECCE, UCF, CORE, SPSL, F3Net,
patch Xception) run parts of the same network without re-implementing it.
"""

from __future__ import annotations

import torch
from torch import nn

from fairforge.detectors.base import (
    BENCHMARK_APP_A,
    BENCHMARK_TABLE_3,
    DETECTORS,
    DeepfakeBenchLayout,
    Detector,
    PretrainedLayout,
    PretrainedTarget,
)
from fairforge.recipes import Recipe, cited

STEM = ("conv1", "bn1", "act1", "conv2", "bn2", "act2")
ENTRY = ("block1", "block2", "block3")  # to 728 channels, stride 16
MIDDLE = tuple(f"block{i}" for i in range(4, 12))  # eight 728-channel blocks
EXIT = ("block12", "conv3", "bn3", "act3", "conv4", "bn4", "act4")  # to 2048 channels, stride 32
FEATURE_CHANNELS = 2048

#: The ImageNet Xception every Xception-based detector starts from, and its layout.
IMAGENET_XCEPTION = "ImageNet Xception (timm legacy_xception, or Cadene's xception-b5690688.pth)"
XCEPTION_TIMM = "legacy_xception"
XCEPTION_PRETRAINED = PretrainedLayout(
    (PretrainedTarget("backbone"),), IMAGENET_XCEPTION, XCEPTION_TIMM
)
#: The Sequential indices of the Xception stem and first blocks in a truncated trunk
#: (``nn.Sequential(*(getattr(net, n) for n in STEM + ("block1", ...)))``).
XCEPTION_TRUNK_RULES = (
    (r"^conv1\.", "0."),
    (r"^bn1\.", "1."),
    (r"^conv2\.", "3."),
    (r"^bn2\.", "4."),
    (r"^block1\.", "6."),
    (r"^block2\.", "7."),
    (r"^block3\.", "8."),
)
#: DeepfakeBench's Xception (FaceForensics++'s names under ``backbone.``, a two-class
#: ``last_linear``, an unused ``adjust_channel``).
XCEPTION_DFB_RULES = (
    (r"^backbone\.last_linear\.(?:1\.)?(weight|bias)$", r"backbone.fc.\1"),
    (r"^backbone\.(.+)$", r"backbone.\1"),
)
XCEPTION_DFB_IGNORE = (r"^backbone\.adjust_channel\.",)
XCEPTION_DFB = DeepfakeBenchLayout(XCEPTION_DFB_RULES, XCEPTION_DFB_IGNORE, head="backbone.fc")


def xception_net(in_chans: int = 3, num_classes: int = 1, drop_rate: float = 0.0) -> nn.Module:
    """A randomly initialised ``legacy_xception``; nothing is downloaded."""
    import timm  # see fairforge.detectors

    return timm.create_model(
        "legacy_xception",
        pretrained=False,
        in_chans=in_chans,
        num_classes=num_classes,
        drop_rate=drop_rate,
    )


def run_stages(net: nn.Module, x: torch.Tensor, names) -> torch.Tensor:
    for name in names:
        x = getattr(net, name)(x)
    return x


def xception_features(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The (B, 2048, h, w) feature map before pooling (after the final ReLU)."""
    return run_stages(net, x, STEM + ENTRY + MIDDLE + EXIT)


@DETECTORS.register(
    "xception",
    recipe=Recipe(
        optimizer="adam",
        lr=2e-4,
        batch_size=32,
        patience=10,
        input_size=299,
        init="imagenet",
        source=BENCHMARK_APP_A,
        cite={
            **cited(
                BENCHMARK_APP_A,
                "optimizer",
                "lr",
                "batch_size",
                patience="10 validation checks without a better AUC",
            ),
            **cited(BENCHMARK_TABLE_3, input_size="16.84 GFLOPs: 299 px"),
            "init": "paper:FaceForensics++ (Rössler et al. 2019): XceptionNet pre-trained on "
            "ImageNet",
        },
    ),
    pretrained=XCEPTION_PRETRAINED,
    # DeepfakeBench's FWA is an Xception trained on face-warping fakes (fairforge's ``fwa`` is
    # the Benchmark paper's ResNet-50): its checkpoint loads onto ``xception``
    deepfakebench={"xception": XCEPTION_DFB, "fwa": XCEPTION_DFB},
)
class XceptionDetector(Detector):
    default_input_size = 256  # DeepfakeBench's resolution; FaceForensics++ used 299

    def __init__(self, input_size: int = 256, drop_rate: float = 0.0):
        super().__init__()
        self.input_size = input_size
        self.backbone = xception_net(drop_rate=drop_rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x).squeeze(1)
