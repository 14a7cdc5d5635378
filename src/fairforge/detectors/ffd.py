"""FFD: Xception with a regression attention map (Dang et al., "On the Detection of Digital
Face Manipulation", CVPR 2020).

After block 7, in the middle flow (728 channels, stride 16: 16×16 at 256 px, the paper's 19×19
at 299 px), a 3×3 separable convolution regresses a one-channel map M (the authors' "reg" map);
the features are multiplied by sigmoid(M) and Xception continues. The map is supervised by the
manipulation mask, area-resized to the map (zeros for real images):
loss = BCE + ``map_weight`` · L1(sigmoid(M), mask).

When a batch carries no masks the map term falls back to weak supervision, as the paper does
without ground-truth maps: real maps are pulled to 0 and the maximum of fake maps to 1.

Simplification: only the regression map (not the template-based maps) is implemented. The
paper starts from an ImageNet Xception (``pretrained:``, or ``init: random`` to train without).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.auxiliary import AuxiliaryLossDetector, batch_mask
from fairforge.detectors.base import (
    BENCHMARK_APP_A,
    BENCHMARK_TABLE_3,
    DETECTORS,
    DeepfakeBenchLayout,
)
from fairforge.detectors.xception import (
    ENTRY,
    EXIT,
    MIDDLE,
    STEM,
    XCEPTION_DFB_IGNORE,
    XCEPTION_DFB_RULES,
    XCEPTION_PRETRAINED,
    run_stages,
    xception_net,
)
from fairforge.recipes import Recipe

_BEFORE_MAP = STEM + ENTRY + MIDDLE[:4]  # through block 7
_AFTER_MAP = MIDDLE[4:] + EXIT


@DETECTORS.register(
    "ffd",
    # Benchmark App. A states FFD's backbone and map (Xception, direct regression), no values
    recipe=Recipe(
        input_size=299,
        init="imagenet",
        source=BENCHMARK_APP_A,
        cite={
            "input_size": BENCHMARK_TABLE_3 + " (16.84 GFLOPs: 299 px)",
            "init": "paper:FFD (Dang et al. 2020): ImageNet-pretrained XceptionNet",
        },
    ),
    pretrained=XCEPTION_PRETRAINED,
    deepfakebench={
        "ffd": DeepfakeBenchLayout(
            (
                (r"^map\.c\.conv1\.weight$", "attention.0.weight"),
                (r"^map\.c\.pointwise\.weight$", "attention.1.weight"),
                *XCEPTION_DFB_RULES,
            ),
            XCEPTION_DFB_IGNORE,
            head="backbone.fc",
        )
    },
)
class FFD(AuxiliaryLossDetector):
    default_input_size = 256
    needs_masks = True

    def __init__(self, input_size: int = 256, map_weight: float = 1.0, drop_rate: float = 0.0):
        super().__init__()
        self.input_size = input_size
        self.map_weight = map_weight
        self.backbone = xception_net(drop_rate=drop_rate)
        self.attention = nn.Sequential(  # a separable 3×3 convolution to one channel
            nn.Conv2d(728, 728, 3, padding=1, groups=728, bias=False),
            nn.Conv2d(728, 1, 1, bias=False),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = run_stages(self.backbone, x, _BEFORE_MAP)
        attention = torch.sigmoid(self.attention(f))
        f = run_stages(self.backbone, f * attention, _AFTER_MAP)
        logits = self.backbone.forward_head(f).squeeze(1)
        return self._keep(logits, attention=attention)

    def map_loss(
        self, attention: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor | None
    ) -> torch.Tensor:
        if mask is not None:
            target = F.adaptive_avg_pool2d(mask.to(attention.dtype), attention.shape[-2:])
            return F.l1_loss(attention, target)
        fake = labels.bool()
        peak = attention.flatten(1).amax(dim=1)
        per_image = torch.where(fake, (1.0 - peak).abs(), attention.flatten(1).mean(dim=1))
        return per_image.mean()

    def loss(self, logits, labels, batch=None):
        attention = self._outputs_for(logits)["attention"]
        bce = F.binary_cross_entropy_with_logits(logits, labels.float())
        return bce + self.map_weight * self.map_loss(attention, labels, batch_mask(batch))
