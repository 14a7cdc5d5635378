"""Multiple-attention (Zhao et al., "Multi-attentional Deepfake Detection", CVPR 2021).

On an EfficientNet-B4 (timm ``efficientnet_b4``, no ImageNet head):

* multiple spatial attention heads: from the features after stage 5 (160 channels, stride 16)
  a 3×3 conv + BN + ReLU and a 1×1 conv + BN give ``num_attentions`` (M = 4) non-negative maps
  (ELU + 1), with a thin border zeroed (the authors' mask);
* textural feature enhancement on the shallow features after stage 2 (32 channels, stride 4):
  local average pooling to the attention grid, its residual (the texture), then a densely
  connected block of three 3×3 convs and a 1×1 conv to 4 × 32 channels;
* bilinear attention pooling (BAP): each attention map pools the enhanced texture into one
  L2-normalised vector (the textural feature matrix P, M × 128), and the sum of the maps pools
  the final 1792-channel features (the global feature G, normalised by the attention mass);
* an ensemble classifier on [projection(P), projection(G)] (Hardswish MLPs of ``mid_dim``).

The regional independence loss (RIL) pulls each attention's pooled texture (the non-textural
average D pooled by the same map) toward a per-attention centre within a margin (0.05 for real,
0.1 for fake: fakes vary more) and pushes the centres apart beyond ``inter_margin``; the
centres are a moving average (``centre_rate``) updated in training. Loss = BCE + ``ril_weight``
· RIL.

Simplifications: the attention-guided data augmentation (AGDA: a second pass that blurs the
most attended region) and the warm-up epochs training the plain backbone first are left out,
and the centre rate does not decay; weights start random (``pretrained=False``). The default
input is the authors' 380 px (DeepfakeBench uses 256, the Benchmark paper's cost table 299);
any size ≥ 64 px works.
"""

from __future__ import annotations

import timm
import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.auxiliary import AuxiliaryLossDetector
from fairforge.detectors.base import IMAGENET_MEAN, IMAGENET_STD, register

SHALLOW_STAGES = 2  # texture from the end of stage 2 (stride 4)
ATTENTION_STAGES = 5  # attention from the end of stage 5 (stride 16)


class AttentionHeads(nn.Module):
    """M non-negative spatial attention maps from deep features."""

    def __init__(self, channels: int, num_attentions: int):
        super().__init__()
        self.extract = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, num_attentions, 1, bias=False),
            nn.BatchNorm2d(num_attentions),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = F.elu(self.extract(x)) + 1.0
        h, w = a.shape[-2:]
        border = torch.zeros(1, 1, h, w, device=a.device, dtype=a.dtype)
        bh, bw = (h + 11) // 12 if h > 4 else 0, (w + 11) // 12 if w > 4 else 0
        border[..., bh : h - bh, bw : w - bw] = 1.0
        return a * border


class TextureEnhance(nn.Module):
    """Local-average residual of shallow features and a 3-conv dense block (4× the channels)."""

    def __init__(self, channels: int):
        super().__init__()
        n = channels
        self.out_channels = 4 * n
        self.conv0 = nn.Conv2d(n, n, 1)
        self.bn1, self.conv1 = nn.BatchNorm2d(n), nn.Conv2d(n, n, 3, padding=1)
        self.bn2, self.conv2 = nn.BatchNorm2d(2 * n), nn.Conv2d(2 * n, n, 3, padding=1)
        self.bn3, self.conv3 = nn.BatchNorm2d(3 * n), nn.Conv2d(3 * n, n, 3, padding=1)
        self.bn4, self.conv_last = nn.BatchNorm2d(4 * n), nn.Conv2d(4 * n, 4 * n, 1)
        self.bn_last = nn.BatchNorm2d(4 * n)

    def forward(self, x: torch.Tensor, grid: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(enhanced texture, D: the features' local averages on the attention ``grid``)."""
        d = F.adaptive_avg_pool2d(x, grid)
        x = x - F.interpolate(d, size=x.shape[-2:], mode="nearest")
        f = self.conv0(x)
        f = torch.cat([f, self.conv1(F.relu(self.bn1(f)))], 1)
        f = torch.cat([f, self.conv2(F.relu(self.bn2(f)))], 1)
        f = torch.cat([f, self.conv3(F.relu(self.bn3(f)))], 1)
        return self.bn_last(self.conv_last(F.relu(self.bn4(f)))), d


def attention_pool(features: torch.Tensor, attentions: torch.Tensor, norm: str) -> torch.Tensor:
    """Bilinear attention pooling: (B, M, C), one feature vector per attention map.

    ``norm="l2"`` normalises each vector (textures), ``"mass"`` divides it by the map's total
    attention (an attention-weighted average; deep features)."""
    if attentions.shape[-2:] != features.shape[-2:]:
        attentions = F.interpolate(
            attentions, size=features.shape[-2:], mode="bilinear", align_corners=True
        )
    pooled = torch.einsum("bmhw,bchw->bmc", attentions, features)
    if norm == "l2":
        return F.normalize(pooled, p=2, dim=-1)
    return pooled / (attentions.sum(dim=(2, 3)).unsqueeze(-1) + 1e-8)


@register("multi_attention")
class MultiAttention(AuxiliaryLossDetector):
    default_input_size = 380
    mean = IMAGENET_MEAN
    std = IMAGENET_STD

    def __init__(
        self,
        input_size: int = 380,
        backbone: str = "efficientnet_b4",
        num_attentions: int = 4,
        mid_dim: int = 256,
        ril_weight: float = 1.0,
        inter_margin: float = 0.2,
        intra_margins: tuple[float, float] = (0.05, 0.1),
        centre_rate: float = 0.05,
        drop_rate: float = 0.25,
        drop_rate_final: float = 0.5,
    ):
        super().__init__()
        self.input_size = input_size
        self.ril_weight = ril_weight
        self.inter_margin = inter_margin
        self.centre_rate = centre_rate
        self.net = timm.create_model(backbone, pretrained=False, num_classes=0)
        info = self.net.feature_info
        shallow = _stage_channels(info, SHALLOW_STAGES)
        deep = _stage_channels(info, ATTENTION_STAGES)
        self.attention = AttentionHeads(deep, num_attentions)
        self.texture = TextureEnhance(shallow)
        self.project_local = nn.Sequential(
            nn.Dropout(drop_rate),
            nn.Linear(num_attentions * self.texture.out_channels, mid_dim),
            nn.Hardswish(),
            nn.Linear(mid_dim, mid_dim),
            nn.Hardswish(),
        )
        self.project_global = nn.Sequential(
            nn.Linear(self.net.num_features, mid_dim), nn.Hardswish()
        )
        self.classifier = nn.Sequential(
            nn.Dropout(drop_rate_final),
            nn.Linear(2 * mid_dim, mid_dim),
            nn.Hardswish(),
            nn.Linear(mid_dim, 1),
        )
        self.register_buffer("centres", torch.zeros(num_attentions, shallow))
        self.register_buffer("intra_margins", torch.tensor(intra_margins, dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        net = self.net
        x = net.bn1(net.conv_stem(x))
        for i, stage in enumerate(net.blocks):
            x = stage(x)
            if i + 1 == SHALLOW_STAGES:
                shallow = x
            if i + 1 == ATTENTION_STAGES:
                attentions = self.attention(x)
        final = net.bn2(net.conv_head(x))
        texture, d = self.texture(shallow, attentions.shape[-2:])
        p = attention_pool(texture, attentions, "l2").flatten(1)
        g = attention_pool(final, attentions.sum(1, keepdim=True), "mass").squeeze(1)
        features = torch.cat([self.project_local(p), F.hardswish(self.project_global(g))], 1)
        logits = self.classifier(features).squeeze(1)
        return self._keep(logits, attentions=attentions, d=d)

    def regional_independence(
        self, d: torch.Tensor, attentions: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """RIL on the non-textural features ``d`` pooled by each attention map; in training
        the centres first move toward the batch (moving average, no gradient)."""
        v = attention_pool(d, attentions, "l2")  # (B, M, C)
        centres = self.centres
        if self.training:
            with torch.no_grad():
                centres = centres + self.centre_rate * (v.detach() - centres).mean(0)
                self.centres.copy_(centres)
        margins = self.intra_margins[labels.long()].unsqueeze(1)  # (B, 1)
        intra = F.relu((v - centres).norm(dim=-1) - margins).mean()
        m = centres.shape[0]
        gaps = torch.cdist(centres, centres)[torch.triu_indices(m, m, 1).unbind(0)]
        inter = F.relu(self.inter_margin - gaps).sum() / m
        return intra + inter

    def loss(self, logits, labels, batch=None):
        out = self._outputs_for(logits)
        bce = F.binary_cross_entropy_with_logits(logits, labels.float())
        ril = self.regional_independence(out["d"], out["attentions"], labels)
        return bce + self.ril_weight * ril


def _stage_channels(feature_info, stages: int) -> int:
    """Channels at the end of the first ``stages`` EfficientNet stages."""
    for entry in feature_info:
        if entry["module"] == f"blocks.{stages - 1}":
            return int(entry["num_chs"])
    raise ValueError(f"the backbone has no stage {stages} in its feature_info")
