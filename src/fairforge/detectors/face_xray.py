"""Face X-ray (Li et al., "Face X-ray for More General Face Forgery Detection", CVPR 2020).

An HRNet-W48 (timm ``hrnet_w48``: its stem and four-branch trunk, without the ImageNet
classification head) predicts the face X-ray: the blending boundary B = 4 M (1 - M) of an image
composed as ``M * foreground + (1 - M) * background`` (zero everywhere for a real image). As
in the paper, the four resolution branches are upsampled to the largest one (1/4 of the input:
64×64 at the paper's 256 px) and concatenated (720 channels for W48), and a 1×1 convolution
with one output channel gives the X-ray logits; :meth:`FaceXRay.xray` returns the map,
sigmoid and bilinearly upsampled to the input size. The label: global average pooling and one
fully connected layer on the same 720-channel representation.

Loss = BCE(label) + ``map_weight`` · BCE(X-ray logits, target X-ray), the paper's
λ = 100. The target comes from the batch's manipulation mask (:attr:`needs_masks`): the mask,
area-resized to the map, is blurred by a Gaussian of ``boundary_sigma`` map pixels into a soft
blend weight M and turned into 4 M (1 - M); a real image's zero mask gives a zero X-ray.

The X-ray training data, real faces blended with another identity's face nearest in
landmarks, is made on the fly as in the paper (``online_forgery = "xray"``: the training set
is :class:`fairforge.data.OnlineForgeryDataset`, a fresh blend of each real face every
epoch), and the batch then carries each blend's own X-ray map (``xray``), the pixel target.
Trained on offline fakes instead (``online_forgery: none``, ``train_methods: [xray]``), the
target is rebuilt from the hard mask (the samples table carries ``mask_path`` only), so the
boundary width is ``boundary_sigma`` rather than the blend's own blur.

``xray_supervision: difference`` (a ``model`` option) trains it as the Benchmark does (its
App. A: public fakes only, no blended images): on the fakes its training dataset ships
(``train_methods``), each with the X-ray of its own manipulation mask as the pixel target,
stored beside its samples (``xray_path``: the mask the dataset released, else the difference
to the frame it was made from, blurred, normalised and mapped to 4 M (1 - M),
:mod:`fairforge.forgery.difference_masks`); no blends are made (the model's
``online_forgery`` is None) and a fake without a mask is left out of training, counted in
its log. ``blended``, the default, is the paper's training on fresh blends. The network is
built with random weights (``pretrained=False``); the paper starts from ImageNet weights
(``pretrained:``, or ``init: random`` to train without). ``backbone`` picks another
timm HRNet (``hrnet_w18_small`` for CPU-sized runs).
"""

from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.auxiliary import AuxiliaryLossDetector, batch_mask
from fairforge.detectors.base import (
    BENCHMARK_APP_A,
    BENCHMARK_TABLE_3,
    DEEPFAKEBENCH_IMAGENET,
    DETECTORS,
    DeepfakeBenchLayout,
    PretrainedLayout,
    PretrainedTarget,
    stated_start,
)
from fairforge.recipes import Recipe, cited


def gaussian_blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """Separable Gaussian blur of a (B, 1, H, W) map, zero padding (the mask is 0 outside)."""
    if sigma <= 0:
        return x
    radius = max(1, int(math.ceil(3 * sigma)))
    t = torch.arange(-radius, radius + 1, dtype=x.dtype, device=x.device)
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    k = k / k.sum()
    x = F.conv2d(x, k.view(1, 1, 1, -1), padding=(0, radius))
    return F.conv2d(x, k.view(1, 1, -1, 1), padding=(radius, 0))


def xray_target(mask: torch.Tensor, size: tuple[int, int], sigma: float) -> torch.Tensor:
    """The face X-ray 4 M (1 - M) of a (B, 1, H, W) manipulation mask at ``size``."""
    m = F.adaptive_avg_pool2d(mask.float(), size)
    m = gaussian_blur(m, sigma).clamp(0.0, 1.0)
    return 4.0 * m * (1.0 - m)


def _facexray_head(match: re.Match) -> str:
    """DeepfakeBench's ``post_process`` and ``fc`` indices → ours (our dropout sits before
    the last layer)."""
    module, index, rest = match.group(1), int(match.group(2)), match.group(3)
    if module == "fc" and index == 6:
        index = 7
    return f"{module}.{index}.{rest}"


_HRNET = PretrainedLayout(
    (PretrainedTarget("backbone", partial=True),),
    "ImageNet HRNet-W48-C (timm hrnet_w48)",
    "hrnet_w48.ms_in1k",
)


@DETECTORS.register(
    "face_xray",
    recipe=Recipe(
        optimizer="adam",
        lr=2e-4,
        batch_size=32,
        schedule="linear_decay",
        input_size=256,
        init="imagenet",
        source=BENCHMARK_APP_A,
        cite={
            **cited(
                BENCHMARK_APP_A,
                "optimizer",
                "lr",
                "batch_size",
                schedule="linearly decayed to 0 over the last, adaptive, iterations",
            ),
            **cited(BENCHMARK_TABLE_3, input_size="42.58 GFLOPs: 256 px"),
            "init": "paper:Face X-ray (Li et al. 2020): ImageNet-pretrained HRNet",
        },
    ),
    pretrained=_HRNET,
)
class FaceXRay(AuxiliaryLossDetector):
    default_input_size = 256
    needs_masks = True
    #: The forgery method whose blends this detector is trained on, generated from real faces.
    online_forgery = "xray"
    #: What its X-ray map is learnt from: ``blended`` (fresh blends of the real faces) or
    #: ``difference`` (its dataset's own fakes, the X-ray of each one's mask as stored).
    XRAY_SUPERVISIONS = ("blended", "difference")

    def __init__(
        self,
        input_size: int = 256,
        backbone: str = "hrnet_w48",
        map_weight: float = 100.0,
        boundary_sigma: float = 1.0,
        drop_rate: float = 0.0,
        xray_supervision: str = "blended",
    ):
        super().__init__()
        if xray_supervision not in self.XRAY_SUPERVISIONS:
            raise ValueError(
                f"face_xray: xray_supervision must be one of {self.XRAY_SUPERVISIONS}, "
                f"got {xray_supervision!r}"
            )
        self.xray_supervision = xray_supervision
        # learning the dataset's X-rays: no blends, and the batch carries each fake's map
        self.xray_maps = xray_supervision == "difference"
        if self.xray_maps:
            self.online_forgery = None
        self.input_size = input_size
        self.map_weight = map_weight
        self.boundary_sigma = boundary_sigma
        # the trunk's four branch outputs (strides 4, 8, 16, 32); no ImageNet head
        import timm  # see fairforge.detectors

        self.backbone = timm.create_model(
            backbone,
            pretrained=False,
            features_only=True,
            feature_location="",
            out_indices=(1, 2, 3, 4),
        )
        channels = sum(self.backbone.feature_info.channels())
        self.xray_head = nn.Conv2d(channels, 1, 1)
        self.head = nn.Sequential(nn.Dropout(drop_rate), nn.Linear(channels, 1))

    def representation(self, x: torch.Tensor) -> torch.Tensor:
        """The four branches, upsampled to the largest and concatenated: (B, 720, H/4, W/4)."""
        branches = self.backbone(x)
        size = branches[0].shape[-2:]
        up = [branches[0]] + [
            F.interpolate(b, size=size, mode="bilinear", align_corners=False) for b in branches[1:]
        ]
        return torch.cat(up, dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rep = self.representation(x)
        logits = self.head(rep.mean(dim=(2, 3))).squeeze(1)
        if not self.training:
            return self._keep(logits)
        return self._keep(logits, xray=self.xray_head(rep))

    @torch.no_grad()
    def xray(self, x: torch.Tensor) -> torch.Tensor:
        """The predicted face X-ray, (B, 1, H, W) in [0, 1] at the input size."""
        logits = self.xray_head(self.representation(x))
        up = F.interpolate(logits, size=x.shape[-2:], mode="bilinear", align_corners=False)
        return torch.sigmoid(up)

    def map_loss(self, xray_logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        target = xray_target(mask, xray_logits.shape[-2:], self.boundary_sigma)
        return F.binary_cross_entropy_with_logits(xray_logits, target)

    def loss(self, logits, labels, batch=None):
        out = self._outputs_for(logits)
        loss = F.binary_cross_entropy_with_logits(logits, labels.float())
        mask = batch_mask(batch)
        given = batch.get("xray") if batch else None
        if "xray" in out and torch.is_tensor(given):  # the blend's own X-ray (online data)
            target = F.adaptive_avg_pool2d(given.float(), out["xray"].shape[-2:])
            loss = loss + self.map_weight * F.binary_cross_entropy_with_logits(out["xray"], target)
        elif "xray" in out:
            if mask is None:  # no masks: real images have a zero X-ray, fakes are unknown
                real = labels == 0
                if real.any():
                    mask = torch.zeros_like(out["xray"][real])
                    loss = loss + self.map_weight * self.map_loss(out["xray"][real], mask)
            else:
                loss = loss + self.map_weight * self.map_loss(out["xray"], mask)
        return loss


@DETECTORS.register(
    "face_xray_dfb",
    recipe=stated_start("imagenet", DEEPFAKEBENCH_IMAGENET),
    pretrained=_HRNET,
    deepfakebench={
        "facexray": DeepfakeBenchLayout(
            (
                (r"^(backbone)\.(.+)$", r"\1.\2"),
                (r"^(post_process|fc)\.(\d+)\.(.+)$", _facexray_head),
            ),
            # HRNet's ImageNet head: built (``fc``: 2048 → 1000) and saved, never used
            (r"^backbone\.(incre_modules|downsamp_modules|final_layer|fc)\.",),
            head="fc.7",
        )
    },
)
class FaceXRayDFB(FaceXRay):
    """DeepfakeBench's ``facexray``, so its checkpoints load: the same HRNet-W48 representation
    (720 channels at 1/4 of the input), then its ``post_process`` (3×3 conv 720→256, BN, ReLU,
    3×3 conv →128, BN, ReLU, 1×1 conv →1, bilinear upsampling to the input size with aligned
    corners: the predicted mask, unbounded) and its ``fc`` classifier on that mask average-pooled
    to half the input size (128² = 16,384 inputs at 256 px, then 1024 and 128 units with
    BatchNorm1d). Loss as DeepfakeBench: BCE + ``map_weight`` (1000) · MSE between the predicted
    mask and the target X-ray at the input size. At DeepfakeBench's 256 px the sizes are its
    fixed ones."""

    def __init__(
        self,
        input_size: int = 256,
        backbone: str = "hrnet_w48",
        map_weight: float = 1000.0,
        boundary_sigma: float = 1.0,
        drop_rate: float = 0.0,
        xray_supervision: str = "blended",
    ):
        super().__init__(
            input_size, backbone, map_weight, boundary_sigma, drop_rate, xray_supervision
        )
        del self.xray_head, self.head
        channels = sum(self.backbone.feature_info.channels())
        side = input_size // 2
        self.post_process = nn.Sequential(
            nn.Conv2d(channels, 256, 3, padding=1),
            nn.BatchNorm2d(256),
            nn.ReLU(),
            nn.Conv2d(256, 128, 3, padding=1),
            nn.BatchNorm2d(128),
            nn.ReLU(),
            nn.Conv2d(128, 1, 1),
            nn.Upsample(size=(input_size, input_size), mode="bilinear", align_corners=True),
        )
        self.fc = nn.Sequential(
            nn.Linear(side * side, 1024),
            nn.BatchNorm1d(1024),
            nn.ReLU(),
            nn.Linear(1024, 128),
            nn.BatchNorm1d(128),
            nn.ReLU(),
            nn.Dropout(drop_rate),
            nn.Linear(128, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = self.post_process(self.representation(x))
        pooled = F.adaptive_avg_pool2d(mask, self.input_size // 2).flatten(1)
        return self._keep(self.fc(pooled).squeeze(1), mask=mask)

    @torch.no_grad()
    def xray(self, x: torch.Tensor) -> torch.Tensor:
        return self.post_process(self.representation(x))

    def loss(self, logits, labels, batch=None):
        out = self._outputs_for(logits)
        loss = F.binary_cross_entropy_with_logits(logits, labels.float())
        mask = batch_mask(batch)
        if mask is not None:
            target = xray_target(mask, out["mask"].shape[-2:], self.boundary_sigma)
            loss = loss + self.map_weight * F.mse_loss(out["mask"], target)
        return loss
