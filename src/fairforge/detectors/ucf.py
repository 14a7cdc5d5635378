"""UCF: uncovering common features (Yan et al., ICCV 2023).

Two encoders split an image into *content* and *forgery fingerprint* features: the fingerprint
encoder is a full Xception, the content encoder Xception's stem and entry flow (728 channels at
stride 16); both are reduced to 512 channels by a 1×1 conv (DeepfakeBench's
"adjust_channel"). The fingerprint is split by two 1×1 blocks into a method-specific and a common half; the common half is pooled and
classified. A conditional decoder re-renders images from content features styled (AdaIN) by
fingerprint features: each image from its own fingerprint (self reconstruction) and from the
fingerprint of another image of the batch (cross reconstruction), both targets being the image
that supplied the content. Loss = BCE(common) + ``recon_weight`` · (self + cross L1) in training;
in eval mode only the fingerprint branch runs (as DeepfakeBench's test loss).

Simplifications: the specific half gets no method-classification loss (training batches carry
binary labels only) and the contrastive loss on the common features is left out, so the
disentanglement comes from the reconstruction losses alone; the partner for the cross
reconstruction is the next image in the batch (a fixed roll, not a real/fake pairing); the
content encoder is shallower than the paper's second Xception (AdaIN only uses the
fingerprint's channel statistics, so the two maps need not share a resolution), and the
decoder is a plain upsampling stack.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.auxiliary import AuxiliaryLossDetector
from fairforge.detectors.base import register
from fairforge.detectors.recce import ImageDecoder
from fairforge.detectors.xception import (
    ENTRY,
    FEATURE_CHANNELS,
    STEM,
    xception_features,
    xception_net,
)


def adain(content: torch.Tensor, style: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Give ``content`` the per-channel mean and standard deviation of ``style``."""
    c_mean = content.mean(dim=(2, 3), keepdim=True)
    c_std = (content.var(dim=(2, 3), keepdim=True, unbiased=False) + eps).sqrt()
    s_mean = style.mean(dim=(2, 3), keepdim=True)
    s_std = (style.var(dim=(2, 3), keepdim=True, unbiased=False) + eps).sqrt()
    return (content - c_mean) / c_std * s_std + s_mean


def _conv1x1(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


@register("ucf")
class UCF(AuxiliaryLossDetector):
    default_input_size = 256

    def __init__(
        self,
        input_size: int = 256,
        feature_dim: int = 512,
        recon_weight: float = 0.3,
        drop_rate: float = 0.2,
    ):
        super().__init__()
        self.input_size = input_size
        self.recon_weight = recon_weight
        half = feature_dim // 2
        self.encoder_f = xception_net()
        content_net = xception_net()
        self.encoder_c = nn.Sequential(*(getattr(content_net, n) for n in STEM + ENTRY))
        self.adjust_f = _conv1x1(FEATURE_CHANNELS, feature_dim)
        self.adjust_c = _conv1x1(728, feature_dim)
        self.block_specific = _conv1x1(feature_dim, half)
        self.block_common = _conv1x1(feature_dim, half)
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(drop_rate), nn.Linear(half, 1))
        self.decoder = ImageDecoder(feature_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fingerprint = self.adjust_f(xception_features(self.encoder_f, x))
        specific = self.block_specific(fingerprint)
        common = self.block_common(fingerprint)
        logits = self.head(F.adaptive_avg_pool2d(common, 1)).squeeze(1)
        if not self.training:
            return self._keep(logits)  # scoring needs neither content nor reconstructions
        content = self.adjust_c(self.encoder_c(x))
        style = torch.cat((specific, common), dim=1)
        size = x.shape[-2:]
        self_recon = self.decoder(adain(content, style), size)
        cross_recon = self.decoder(adain(content, style.roll(1, dims=0)), size)
        return self._keep(logits, image=x, self_recon=self_recon, cross_recon=cross_recon)

    def loss(self, logits, labels, batch=None):
        out = self._outputs_for(logits)
        loss = F.binary_cross_entropy_with_logits(logits, labels.float())
        if "self_recon" in out:
            x = out["image"]
            loss = loss + self.recon_weight * (
                F.l1_loss(out["self_recon"], x) + F.l1_loss(out["cross_recon"], x)
            )
        return loss
