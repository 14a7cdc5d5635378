"""Multiple-attention (Zhao et al., "Multi-attentional Deepfake Detection", CVPR 2021).

On the authors' EfficientNet-B4 (efficientnet_pytorch's, built from timm's
``tf_efficientnet_b4``: TF "same" padding fixed for the input size, BatchNorm eps 1e-3; see
:mod:`fairforge.detectors.efficientnet`), no ImageNet head. As the authors' code (and
DeepfakeBench's copy of it) walks the backbone's modules, the stem's and the head's BatchNorm
are not followed by their swish.

* multiple spatial attention heads: from the features after stage 5 (160 channels, stride 16)
  a 3×3 conv + BN + ReLU and a 1×1 conv + BN give ``num_attentions`` (M = 4) non-negative maps
  (ELU + 1), times the authors' border mask (a 24 × 24 grid with its outer two cells zero,
  resized nearest to the map);
* textural feature enhancement on the shallow features after stage 2 (32 channels, stride 4):
  local average pooling to the attention grid, its residual (the texture), then a densely
  connected block of three 3×3 convs and a 1×1 conv to 4 × 32 channels;
* bilinear attention pooling (BAP): each attention map pools the enhanced texture into one
  L2-normalised vector (the textural feature matrix P, M × 128), and the sum of the maps pools
  the final 1792-channel features (the global feature G, normalised by the attention mass);
* an ensemble classifier on [projection(P), projection(G)] (Hardswish MLPs of ``mid_dim``);
  dropout on P (``drop_rate``) and before the classifier (``drop_rate_final``, which
  DeepfakeBench builds but does not apply).

The regional independence loss (RIL) pulls each attention's pooled texture (the non-textural
average D pooled by the same map) toward a per-attention centre within a margin (0.05 for real,
0.1 for fake: fakes vary more) and pushes the centres apart beyond ``inter_margin``; the
centres are a moving average (``centre_rate``) updated in training, training state that is not
saved with the weights (as in DeepfakeBench, where they live in the loss). Loss = BCE +
``ril_weight`` · RIL.

Simplifications: the attention-guided data augmentation (AGDA: a second pass that blurs the
most attended region) and the warm-up epochs training the plain backbone first are left out,
and the centre rate does not decay; weights start random (``pretrained=False``). The default
input is the authors' 380 px (DeepfakeBench uses 256, the Benchmark paper's cost table 299);
any size ≥ 64 px works.

``multi_attention_dfb`` is DeepfakeBench's form (its EfficientNet's unpadded stem and paddings
for 380 px, mean = std = 0.5, 256 px); its checkpoints load exactly
(:mod:`fairforge.detectors.deepfakebench`), less the EfficientNet's own two-class head
(``backbone.last_layer``), which DeepfakeBench trains only in its warm-up epochs.
DeepfakeBench's model scores with that head, not the attention head, for its first
``backbone_nEpochs × batch_per_epoch`` forward passes, including those of a freshly loaded
checkpoint in its test script; fairforge always scores with the attention head.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.auxiliary import AuxiliaryLossDetector
from fairforge.detectors.base import IMAGENET_MEAN, IMAGENET_STD, register
from fairforge.detectors.efficientnet import EFFICIENTNET_PYTORCH_SIZE, PADDINGS, static_padding

SHALLOW_STAGES = 2  # texture from the end of stage 2 (stride 4)
ATTENTION_STAGES = 5  # attention from the end of stage 5 (stride 16)


class AttentionMap(nn.Module):
    """M non-negative spatial attention maps from deep features, with the authors' border
    mask: a 24 × 24 grid whose outer two cells are zero, resized (nearest) to the map."""

    def __init__(self, channels: int, num_attentions: int):
        super().__init__()
        self.conv_extract = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, num_attentions, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(num_attentions)
        mask = torch.zeros(1, 1, 24, 24)
        mask[..., 2:-2, 2:-2] = 1.0
        self.register_buffer("mask", mask)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.bn2(self.conv2(F.relu(self.bn1(self.conv_extract(x)))))
        a = F.elu(a) + 1.0
        return a * F.interpolate(self.mask, size=a.shape[-2:], mode="nearest").to(a.dtype)


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
        backbone: str = "tf_efficientnet_b4",
        num_attentions: int = 4,
        mid_dim: int = 256,
        ril_weight: float = 1.0,
        inter_margin: float = 0.2,
        intra_margins: tuple[float, float] = (0.05, 0.1),
        centre_rate: float = 0.05,
        drop_rate: float = 0.25,
        drop_rate_final: float = 0.5,
        padding: str = "same",
    ):
        super().__init__()
        if padding not in PADDINGS:
            raise ValueError(f"multi_attention padding must be one of {PADDINGS}, got {padding!r}")
        if not backbone.startswith("tf_efficientnet"):
            raise ValueError(f"multi_attention needs a tf_efficientnet_* backbone, got {backbone}")
        self.input_size = input_size
        self.padding = padding
        self.ril_weight = ril_weight
        self.inter_margin = inter_margin
        self.intra_margins = tuple(intra_margins)
        self.centre_rate = centre_rate
        self.centres: torch.Tensor | None = None  # RIL state, as DeepfakeBench: not saved
        import timm  # see fairforge.detectors

        net = timm.create_model(backbone, pretrained=False, num_classes=0)
        if padding == "deepfakebench":
            net = static_padding(net, EFFICIENTNET_PYTORCH_SIZE.get(backbone, 380), True)
        else:
            net = static_padding(net, input_size)
        # the authors' feature loop runs the stem and head BatchNorms without their swish
        net.bn1.act = nn.Identity()
        net.bn2.act = nn.Identity()
        self.backbone = net
        info = net.feature_info
        shallow = _stage_channels(info, SHALLOW_STAGES)
        deep = _stage_channels(info, ATTENTION_STAGES)
        self.attention_generation = AttentionMap(deep, num_attentions)
        self.texture_enhance = TextureEnhance(shallow)
        self.dropout = nn.Dropout(drop_rate)
        self.projection_local = nn.Sequential(
            nn.Linear(num_attentions * self.texture_enhance.out_channels, mid_dim),
            nn.Hardswish(),
            nn.Linear(mid_dim, mid_dim),
            nn.Hardswish(),
        )
        self.projection_final = nn.Sequential(nn.Linear(net.num_features, mid_dim), nn.Hardswish())
        self.dropout_final = nn.Dropout(drop_rate_final)
        self.ensemble_classifier_fc = nn.Sequential(
            nn.Linear(2 * mid_dim, mid_dim), nn.Hardswish(), nn.Linear(mid_dim, 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        net = self.backbone
        x = net.bn1(net.conv_stem(x))
        for i, stage in enumerate(net.blocks):
            x = stage(x)
            if i + 1 == SHALLOW_STAGES:
                shallow = x
            if i + 1 == ATTENTION_STAGES:
                attentions = self.attention_generation(x)
        final = net.bn2(net.conv_head(x))
        texture, d = self.texture_enhance(shallow, attentions.shape[-2:])
        p = self.dropout(attention_pool(texture, attentions, "l2")).flatten(1)
        g = attention_pool(final, attentions.sum(1, keepdim=True), "mass").squeeze(1)
        features = torch.cat([self.projection_local(p), F.hardswish(self.projection_final(g))], 1)
        logits = self.ensemble_classifier_fc(self.dropout_final(features)).squeeze(1)
        return self._keep(logits, attentions=attentions, d=d)

    def regional_independence(
        self, d: torch.Tensor, attentions: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """RIL on the non-textural features ``d`` pooled by each attention map; in training
        the centres first move toward the batch (moving average, no gradient)."""
        v = attention_pool(d, attentions, "l2")  # (B, M, C)
        centres = self.centres
        if centres is None or centres.shape != v.shape[1:] or centres.device != v.device:
            centres = torch.zeros(v.shape[1:], device=v.device, dtype=torch.float32)
        if self.training:
            with torch.no_grad():
                centres = centres + self.centre_rate * (v.detach() - centres).mean(0)
        self.centres = centres
        margins = torch.tensor(self.intra_margins, device=v.device)[labels.long()].unsqueeze(1)
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


@register("multi_attention_dfb")
class MultiAttentionDFB(MultiAttention):
    """DeepfakeBench's ``multi_attention``: its EfficientNet-B4 (unpadded stem,
    efficientnet_pytorch's paddings for 380 px, ``padding="deepfakebench"``), mean = std = 0.5,
    256 px."""

    default_input_size = 256
    mean = (0.5, 0.5, 0.5)
    std = (0.5, 0.5, 0.5)

    def __init__(self, input_size: int = 256, padding: str = "deepfakebench", **kwargs):
        super().__init__(input_size=input_size, padding=padding, **kwargs)


def _stage_channels(feature_info, stages: int) -> int:
    """Channels at the end of the first ``stages`` EfficientNet stages."""
    for entry in feature_info:
        if entry["module"] == f"blocks.{stages - 1}":
            return int(entry["num_chs"])
    raise ValueError(f"the backbone has no stage {stages} in its feature_info")
