"""RECCE: reconstruction-classification learning (Cao et al., CVPR 2022).

An encoder-decoder is trained to reconstruct *real* faces only, so that its reconstruction
error is small on real images and large on forged ones; the error map then guides the
classifier. Here the encoder is Xception's stem and entry flow (728 channels, stride 16), the
decoder upsamples back to the image (tanh, the inputs being normalised to [-1, 1]), the
absolute reconstruction difference is turned into a spatial attention that re-weights the
encoder features (F · (1 + sigmoid(conv(|x − x̂|)))), and Xception's middle and exit flows
classify. Loss = BCE + ``recon_weight`` · L1(x̂, x) averaged over the real images of the batch.

Simplifications: the paper's metric-learning loss and multi-scale graph reasoning between
encoder and decoder features are left out; the decoder is a plain upsampling stack.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.auxiliary import AuxiliaryLossDetector
from fairforge.detectors.base import register
from fairforge.detectors.xception import ENTRY, EXIT, MIDDLE, STEM, run_stages, xception_net


class ImageDecoder(nn.Module):
    """Upsample a feature map ×2 per stage back to an RGB image in [-1, 1]."""

    def __init__(self, cin: int, widths=(256, 128, 64, 32)):
        super().__init__()
        stages = []
        for cout in widths:
            stages += [
                nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
                nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                nn.BatchNorm2d(cout),
                nn.ReLU(inplace=True),
            ]
            cin = cout
        stages += [nn.Conv2d(cin, 3, 3, padding=1), nn.Tanh()]
        self.net = nn.Sequential(*stages)

    def forward(self, f: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        out = self.net(f)
        if out.shape[-2:] != size:  # Xception's unpadded stem makes strides inexact
            out = F.interpolate(out, size=size, mode="bilinear", align_corners=False)
        return out


def real_reconstruction_l1(
    recon: torch.Tensor, x: torch.Tensor, labels: torch.Tensor
) -> torch.Tensor:
    """Mean absolute reconstruction error over the real images (0 when the batch has none)."""
    real = (labels == 0).to(x.dtype)
    per_image = (recon - x).abs().flatten(1).mean(dim=1)
    return (per_image * real).sum() / real.sum().clamp_min(1.0)


@register("recce")
class RECCE(AuxiliaryLossDetector):
    default_input_size = 256

    def __init__(self, input_size: int = 256, recon_weight: float = 0.1, drop_rate: float = 0.0):
        super().__init__()
        self.input_size = input_size
        self.recon_weight = recon_weight
        self.backbone = xception_net(drop_rate=drop_rate)
        self.decoder = ImageDecoder(728)
        self.guide = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(8, 1, 3, padding=1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = run_stages(self.backbone, x, STEM + ENTRY)
        recon = self.decoder(f, x.shape[-2:])
        residual = (x - recon).abs().mean(dim=1, keepdim=True)
        attention = torch.sigmoid(self.guide(F.adaptive_avg_pool2d(residual, f.shape[-2:])))
        f = run_stages(self.backbone, f * (1.0 + attention), MIDDLE + EXIT)
        logits = self.backbone.forward_head(f).squeeze(1)
        return self._keep(logits, recon=recon, image=x)

    def loss(self, logits, labels, batch=None):
        out = self._outputs_for(logits)
        bce = F.binary_cross_entropy_with_logits(logits, labels.float())
        return bce + self.recon_weight * real_reconstruction_l1(out["recon"], out["image"], labels)
