"""A test-side reconstruction of DeepfakeBench's model definitions (SCLBD/DeepfakeBench,
``training/networks`` and ``training/detectors``), written from reading them.

It exists only to produce test data: the state-dict key names and shapes DeepfakeBench saves
(``tests/data/deepfakebench/<model>.json``) and reference outputs that fairforge's importer
(:mod:`fairforge.detectors.deepfakebench`) must reproduce. Every module keeps DeepfakeBench's
attribute names, order of operations and quirks (shared BatchNorms in MesoNet, the unpadded
EfficientNet stem with efficientnet_pytorch's static "same" padding computed for 380 px, the
capsule squash over the capsule axis, the inclusive F3Net band edges, parameters built but
never used). DeepfakeBench's Xception is the Cadene/FaceForensics++ port, the same network
and parameter names as timm's ``legacy_xception``, so its layers are borrowed from timm.

``build(model, size)`` returns ``(module, score)`` where ``score(module, x)`` is DeepfakeBench's
probability of "fake" for images ``x`` as its test code reads it (``pred_dict["prob"]``);
:func:`dfb_inputs` normalises images as each detector config says (``mean``, ``std``:
ImageNet's for ``sbi``, 0.5 for the others). ``CONSTANTS`` lists the keys that DeepfakeBench
stores as fixed parameters (DCT matrices, band masks, SRM kernels), which a test must not
randomise. ``python tests/helpers/deepfakebench_reference.py`` rewrites the JSON files.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import timm
import torch
import torch.nn.functional as F
from torch import nn

DATA = Path(__file__).parents[1] / "data" / "deepfakebench"
DFB_SIZE = 256  # DeepfakeBench's resolution for these models but UIA-ViT
RESOLUTION = {"uia_vit": 224}
# ``mean`` and ``std`` of training/config/detector/<model>.yaml: 0.5 but for sbi
HALF = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
NORMALISATION = {"sbi": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))}


def normalisation(model: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(mean, std)`` on [0, 1] of DeepfakeBench's config for ``model``."""
    return NORMALISATION.get(model, HALF)


# --- Xception (training/networks/xception.py) -----------------------------------------------

_XCEPTION_PARTS = (
    ["conv1", "bn1", "conv2", "bn2"]
    + [f"block{i}" for i in range(1, 13)]
    + ["conv3", "bn3", "conv4", "bn4"]
)


class Xception(nn.Module):
    def __init__(self, inc: int = 3, num_classes: int = 2, dropout: float = 0.0):
        super().__init__()
        net = timm.create_model("legacy_xception", pretrained=False, in_chans=inc, num_classes=0)
        for name in _XCEPTION_PARTS:
            setattr(self, name, getattr(net, name))
        self.relu = nn.ReLU(inplace=True)
        if dropout:
            self.last_linear = nn.Sequential(nn.Dropout(dropout), nn.Linear(2048, num_classes))
        else:
            self.last_linear = nn.Linear(2048, num_classes)
        self.adjust_channel = nn.Sequential(
            nn.Conv2d(2048, 512, 1, 1), nn.BatchNorm2d(512), nn.ReLU(inplace=False)
        )

    def fea_part1_0(self, x):
        return self.relu(self.bn1(self.conv1(x)))

    def fea_part1_1(self, x):
        return self.relu(self.bn2(self.conv2(x)))

    def fea_part2(self, x):
        return self.block3(self.block2(self.block1(x)))

    def fea_part3(self, x):
        for i in range(4, 8):
            x = getattr(self, f"block{i}")(x)
        return x

    def fea_part4(self, x):
        for i in range(8, 13):
            x = getattr(self, f"block{i}")(x)
        return x

    def fea_part5(self, x):
        x = self.relu(self.bn3(self.conv3(x)))
        return self.bn4(self.conv4(x))

    def features(self, x):
        x = self.fea_part1_1(self.fea_part1_0(x))
        return self.fea_part5(self.fea_part4(self.fea_part3(self.fea_part2(x))))

    def classifier(self, features):
        x = F.adaptive_avg_pool2d(self.relu(features), 1).flatten(1)
        return self.last_linear(x)


def _softmax_fake(logits: torch.Tensor) -> torch.Tensor:
    return torch.softmax(logits, dim=1)[:, 1]


# --- MesoNet (training/networks/mesonet.py) -------------------------------------------------


class Meso4(nn.Module):
    def __init__(self, size: int = DFB_SIZE):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.leakyrelu = nn.LeakyReLU(0.1)
        self.conv2 = nn.Conv2d(8, 8, 5, padding=2, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.conv3 = nn.Conv2d(8, 16, 5, padding=2, bias=False)
        self.conv4 = nn.Conv2d(16, 16, 5, padding=2, bias=False)
        self.maxpooling1 = nn.MaxPool2d(2)
        self.maxpooling2 = nn.MaxPool2d(4)
        self.dropout = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(16 * (size // 32) ** 2, 16)
        self.fc2 = nn.Linear(16, 2)

    def features(self, x):
        x = self.maxpooling1(self.bn1(self.relu(self.conv1(x))))
        x = self.maxpooling1(self.bn1(self.relu(self.conv2(x))))  # bn1 shared, as in DFB
        x = self.maxpooling1(self.bn2(self.relu(self.conv3(x))))
        x = self.maxpooling2(self.bn2(self.relu(self.conv4(x))))  # bn2 shared
        return x.flatten(1)

    def forward(self, x):
        out = self.fc1(self.dropout(self.features(x)))
        return self.fc2(self.dropout(self.leakyrelu(out)))


class MesoInception4(nn.Module):
    def __init__(self, size: int = DFB_SIZE):
        super().__init__()
        for layer, cin, a in ((1, 3, 1), (2, 11, 2)):
            p = f"Incption{layer}_"
            setattr(self, p + "conv1", nn.Conv2d(cin, a, 1, bias=False))
            setattr(self, p + "conv2_1", nn.Conv2d(cin, 4, 1, bias=False))
            setattr(self, p + "conv2_2", nn.Conv2d(4, 4, 3, padding=1, bias=False))
            setattr(self, p + "conv3_1", nn.Conv2d(cin, 4, 1, bias=False))
            setattr(self, p + "conv3_2", nn.Conv2d(4, 4, 3, padding=2, dilation=2, bias=False))
            setattr(self, p + "conv4_1", nn.Conv2d(cin, 2, 1, bias=False))
            setattr(self, p + "conv4_2", nn.Conv2d(2, 2, 3, padding=3, dilation=3, bias=False))
            setattr(self, p + "bn", nn.BatchNorm2d(a + 10))
        self.conv1 = nn.Conv2d(12, 16, 5, padding=2, bias=False)
        self.relu = nn.ReLU(inplace=True)
        self.leakyrelu = nn.LeakyReLU(0.1)
        self.bn1 = nn.BatchNorm2d(16)
        self.maxpooling1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(16, 16, 5, padding=2, bias=False)
        self.maxpooling2 = nn.MaxPool2d(4)
        self.dropout = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(16 * (size // 32) ** 2, 16)
        self.fc2 = nn.Linear(16, 2)

    def _inception(self, x, layer):
        p = f"Incption{layer}_"
        g = lambda n: getattr(self, p + n)  # noqa: E731
        y = torch.cat(
            (
                g("conv1")(x),
                g("conv2_2")(g("conv2_1")(x)),
                g("conv3_2")(g("conv3_1")(x)),
                g("conv4_2")(g("conv4_1")(x)),
            ),
            1,
        )
        return self.maxpooling1(g("bn")(y))

    def forward(self, x):
        x = self._inception(self._inception(x, 1), 2)
        x = self.maxpooling1(self.bn1(self.relu(self.conv1(x))))
        x = self.maxpooling2(self.bn1(self.relu(self.conv2(x)))).flatten(1)
        out = self.leakyrelu(self.fc1(self.dropout(x)))
        return self.fc2(self.dropout(out))


class _Backboned(nn.Module):
    """DeepfakeBench's detector wrapper: the network under ``backbone``."""

    def __init__(self, backbone: nn.Module):
        super().__init__()
        self.backbone = backbone


# --- EfficientNet-B4 (training/networks/efficientnetb4.py on efficientnet_pytorch) ----------


class _StaticSamePad(nn.Conv2d):
    """efficientnet_pytorch's Conv2dStaticSamePadding: TF "same" padding fixed at build time
    for the image size the network assumes (380 px for B4), whatever the input."""

    def __init__(self, cin, cout, k, stride=1, groups=1, bias=False, image_size=None):
        super().__init__(cin, cout, k, stride, 0, groups=groups, bias=bias)
        ih = image_size
        oh = math.ceil(ih / stride)
        pad = max((oh - 1) * stride + k - ih, 0)
        self.pad = (pad // 2, pad - pad // 2, pad // 2, pad - pad // 2)

    def forward(self, x):
        return super().forward(F.pad(x, self.pad))


class _MBConv(nn.Module):
    def __init__(self, cin, cout, k, stride, expand, image_size):
        super().__init__()
        mid = cin * expand
        self.has_expand = expand != 1
        if self.has_expand:
            self._expand_conv = _StaticSamePad(cin, mid, 1, image_size=image_size)
            self._bn0 = nn.BatchNorm2d(mid, momentum=0.01, eps=1e-3)
        self._depthwise_conv = _StaticSamePad(
            mid, mid, k, stride, groups=mid, image_size=image_size
        )
        self._bn1 = nn.BatchNorm2d(mid, momentum=0.01, eps=1e-3)
        squeezed = max(1, int(cin * 0.25))
        self._se_reduce = _StaticSamePad(mid, squeezed, 1, bias=True, image_size=1)
        self._se_expand = _StaticSamePad(squeezed, mid, 1, bias=True, image_size=1)
        self._project_conv = _StaticSamePad(mid, cout, 1, image_size=math.ceil(image_size / stride))
        self._bn2 = nn.BatchNorm2d(cout, momentum=0.01, eps=1e-3)
        self.skip = stride == 1 and cin == cout

    def forward(self, inputs):
        x = inputs
        if self.has_expand:
            x = F.silu(self._bn0(self._expand_conv(x)))
        x = F.silu(self._bn1(self._depthwise_conv(x)))
        s = F.adaptive_avg_pool2d(x, 1)
        s = self._se_expand(F.silu(self._se_reduce(s)))
        x = torch.sigmoid(s) * x
        x = self._bn2(self._project_conv(x))
        return x + inputs if self.skip else x


# (repeats, kernel, stride, expand, out) for B4 after width 1.4 / depth 1.8 scaling
_B4 = ((2, 3, 1, 1, 24), (4, 3, 2, 6, 32), (4, 5, 2, 6, 56), (6, 3, 2, 6, 112),
       (6, 5, 1, 6, 160), (8, 5, 2, 6, 272), (2, 3, 1, 6, 448))  # fmt: skip


# B0 (width and depth 1.0): efficientnet_pytorch's smallest network, for pretrained-file tests
_B0 = ((1, 3, 1, 1, 16), (2, 3, 2, 6, 24), (2, 5, 2, 6, 40), (3, 3, 2, 6, 80),
       (3, 5, 1, 6, 112), (4, 5, 2, 6, 192), (1, 3, 1, 6, 320))  # fmt: skip


class _EfficientNet(nn.Module):
    """efficientnet_pytorch's ``EfficientNet`` (its attribute names and order); B4 with
    DeepfakeBench's unpadded stem by default, or ``config``/``stem``/``head`` of another B-size
    with the library's own static "same" stem."""

    def __init__(
        self,
        image_size: int = 380,
        config=_B4,
        stem: int = 48,
        head: int = 1792,
        unpadded_stem: bool = True,
        num_classes: int | None = None,
    ):
        super().__init__()
        if unpadded_stem:  # DeepfakeBench replaces the stem by an unpadded convolution
            self._conv_stem = nn.Conv2d(3, stem, kernel_size=3, stride=2, bias=False)
        else:
            self._conv_stem = _StaticSamePad(3, stem, 3, 2, image_size=image_size)
        self._bn0 = nn.BatchNorm2d(stem, momentum=0.01, eps=1e-3)
        size = math.ceil(image_size / 2)
        blocks, cin = [], stem
        for repeats, k, stride, expand, cout in config:
            for i in range(repeats):
                s = stride if i == 0 else 1
                blocks.append(_MBConv(cin, cout, k, s, expand, size))
                size = math.ceil(size / s)
                cin = cout
        self._blocks = nn.ModuleList(blocks)
        self._conv_head = _StaticSamePad(cin, head, 1, image_size=size)
        self._bn1 = nn.BatchNorm2d(head, momentum=0.01, eps=1e-3)
        # efficientnet_pytorch's remaining children, in its order (multi-attention walks them)
        self._avg_pooling = nn.AdaptiveAvgPool2d(1)
        self._dropout = nn.Dropout(0.4)
        self._fc = nn.Identity() if num_classes is None else nn.Linear(head, num_classes)
        self._swish = nn.SiLU()

    def extract_features(self, x):
        x = F.silu(self._bn0(self._conv_stem(x)))
        for block in self._blocks:
            x = block(x)
        return F.silu(self._bn1(self._conv_head(x)))


class EfficientNetB4(nn.Module):
    """``backbone_config``: ``num_classes`` (2; ``sbi``: 3), ``mode: original`` (no
    ``adjust_channel``), ``dropout: false``."""

    def __init__(self, num_classes: int = 2):
        super().__init__()
        self.efficientnet = _EfficientNet()
        self.last_layer = nn.Linear(1792, num_classes)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.efficientnet.extract_features(x), 1).flatten(1)
        return self.last_layer(x)


# --- Multi-attention (training/detectors/multi_attention_detector.py) -----------------------


class _AttentionMap(nn.Module):
    def __init__(self, cin, m):
        super().__init__()
        self.register_buffer("mask", torch.zeros([1, 1, 24, 24]))
        self.mask[0, 0, 2:-2, 2:-2] = 1
        self.conv_extract = nn.Conv2d(cin, cin, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv2 = nn.Conv2d(cin, m, kernel_size=1, bias=False)
        self.bn2 = nn.BatchNorm2d(m)

    def forward(self, x):
        x = self.bn2(self.conv2(F.relu(self.bn1(self.conv_extract(x)))))
        x = F.elu(x) + 1
        return x * F.interpolate(self.mask, (x.shape[2], x.shape[3]), mode="nearest")


def _bap(features, attentions, norm=2):
    if features.shape[-2:] != attentions.shape[-2:]:
        attentions = F.interpolate(
            attentions, size=features.shape[-2:], mode="bilinear", align_corners=True
        )
    matrix = torch.einsum("imjk,injk->imn", attentions, features)
    if norm == 1:
        return matrix / torch.sum(attentions + 1e-8, dim=(2, 3)).unsqueeze(-1)
    return F.normalize(matrix, p=2, dim=-1)


class _TextureEnhanceV1(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.output_features = 4 * n
        self.conv0 = nn.Conv2d(n, n, 1)
        self.conv1 = nn.Conv2d(n, n, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(n)
        self.conv2 = nn.Conv2d(2 * n, n, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(2 * n)
        self.conv3 = nn.Conv2d(3 * n, n, 3, padding=1)
        self.bn3 = nn.BatchNorm2d(3 * n)
        self.conv_last = nn.Conv2d(4 * n, 4 * n, 1)
        self.bn4 = nn.BatchNorm2d(4 * n)
        self.bn_last = nn.BatchNorm2d(4 * n)

    def forward(self, f, attentions):
        d = F.adaptive_avg_pool2d(f, attentions.shape[2:])
        f = f - F.interpolate(d, f.shape[2:], mode="nearest")
        f0 = self.conv0(f)
        f1 = torch.cat([f0, self.conv1(F.relu(self.bn1(f0)))], 1)
        f2 = torch.cat([f1, self.conv2(F.relu(self.bn2(f1)))], 1)
        f3 = torch.cat([f2, self.conv3(F.relu(self.bn3(f2)))], 1)
        return self.bn_last(self.conv_last(F.relu(self.bn4(f3)))), d


class MultiAttention(nn.Module):
    """After DeepfakeBench's warm-up epochs: attention head on its EfficientNet-B4."""

    block_layer = {"b1": 1, "b2": 5, "b3": 9, "b4": 15, "b5": 21, "b6": 29, "b7": 31}

    def __init__(self, m=4, mid=256):
        super().__init__()
        self.backbone = EfficientNetB4()
        self.attention_generation = _AttentionMap(160, m)  # b5's channels
        self.texture_enhance = _TextureEnhanceV1(32)  # b2's channels
        self.projection_local = nn.Sequential(
            nn.Linear(m * 128, mid), nn.Hardswish(), nn.Linear(mid, mid), nn.Hardswish()
        )
        self.projection_final = nn.Sequential(nn.Linear(1792, mid), nn.Hardswish())
        self.ensemble_classifier_fc = nn.Sequential(
            nn.Linear(2 * mid, mid), nn.Hardswish(), nn.Linear(mid, 2)
        )
        self.dropout = nn.Dropout(0.25)
        self.dropout_final = nn.Dropout(0.5)

    def features(self, x):
        out = {}
        for name, module in self.backbone.efficientnet.named_children():
            if name == "_avg_pooling":
                out["final"] = x
                break
            if name != "_blocks":
                x = module(x)
                continue
            for i in range(len(module)):
                x = module[i](x)
                for key, index in self.block_layer.items():
                    if i == index:
                        out[key] = x
        return out

    def forward(self, x):
        out = self.features(x)
        attentions = self.attention_generation(out["b5"])
        enhanced, _ = self.texture_enhance(out["b2"], attentions)
        p = self.dropout(_bap(enhanced, attentions)).flatten(1)
        p = self.projection_local(p)
        g = _bap(out["final"], attentions.sum(1, keepdim=True), norm=1).squeeze(1)
        g = F.hardswish(self.projection_final(g))
        return self.ensemble_classifier_fc(torch.cat([p, g], 1))


# --- UIA-ViT (training/detectors/uia_vit_detector.py) -------------------------------------


class _ViTAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.num_heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        attn_qk = (q @ k.transpose(-2, -1)) * self.scale
        x = (attn_qk.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(x), attn_qk


class _ViTMlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class _ViTBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = _ViTAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = _ViTMlp(dim, 4 * dim)

    def forward(self, x):
        y, attn = self.attn(self.norm1(x))
        x = x + y
        return x + self.mlp(self.norm2(x)), attn


class _PatchEmbed(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=16, stride=16)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class _UIAVisionTransformer(nn.Module):
    def __init__(self, size, dim=768, depth=12, heads=12):
        super().__init__()
        self.patch_embed = _PatchEmbed(dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, (size // 16) ** 2 + 1, dim))
        self.c_real = nn.Parameter(torch.tensor(0.6))
        self.c_fake = nn.Parameter(torch.tensor(0.6))
        self.c_cross = nn.Parameter(torch.tensor(0.2))
        self.blocks = nn.ModuleList([_ViTBlock(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.norm_middle = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(2 * dim, 2)

    def forward_features(self, x, attn_blk, feat_blk):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1) + self.pos_embed
        attn_list = []
        for i, blk in enumerate(self.blocks):
            if i == feat_blk:
                x_block = self.norm_middle(x)
            if i in attn_blk:
                attn_list.append(attn)  # noqa: F821 (the previous block's, as DFB)
            x, attn = blk(x)
        x = self.norm(x)
        if (i + 1) in attn_blk:
            attn_list.append(attn)
        side = int(x_block.shape[1] ** 0.5)
        x_block = x_block[:, 1:].reshape(x_block.shape[0], side, side, x_block.shape[2])
        return x, x_block, torch.cat(attn_list, dim=1)

    def forward(self, x, step=1, attn_blk=(8, 9, 10, 11, 12), feat_blk=6, k=12, thr=0.7):
        x, feat_block, attn_block = self.forward_features(x, attn_blk, feat_blk)
        x_cls, x_patch = x[:, 0], x[:, 1:]
        b, pp, _ = x_patch.shape
        localization = torch.sigmoid(torch.mean(attn_block[:, :, 0, 1:], dim=1))
        if step < 1 / 8.0:
            localization = torch.ones(b, 1, pp) / pp
        else:
            w = torch.sigmoid(torch.tensor(-k * (step - thr)))
            localization = (
                w * torch.ones(b, 1, pp) + (1 - w) * localization.reshape(b, 1, pp)
            ) / pp
        x = torch.cat([x_cls, torch.bmm(localization, x_patch).squeeze(1)], -1)
        return self.head(x), feat_block, attn_block


class UIAViT(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.model = _UIAVisionTransformer(size)

    def forward(self, x):
        return self.model(x, step=1)[0]  # evaluation: step 1


# --- Capsule-Forensics (training/detectors/capsule_net_detector.py) -------------------------


def _squash(t, dim):
    n = (t**2).sum(dim=dim, keepdim=True)
    return n / (1 + n) * t / torch.sqrt(n)


class _StatsNet(nn.Module):
    def forward(self, x):
        x = x.view(x.shape[0], x.shape[1], -1)
        return torch.stack((x.mean(2), x.std(2)), dim=1)


class _View(nn.Module):
    def forward(self, x):
        return x.view(-1, 8)


class _VggExtractor(nn.Module):
    def __init__(self):
        super().__init__()
        layers, cin = [], 3
        for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M"):  # vgg19 features[0:19]
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU(inplace=True)]
                cin = v
        self.vgg_1 = nn.Sequential(*layers)


class _FeatureExtractor(nn.Module):
    def __init__(self):
        super().__init__()
        self.capsules = nn.ModuleList(
            nn.Sequential(
                nn.Conv2d(256, 64, 3, 1, 1),
                nn.BatchNorm2d(64),
                nn.ReLU(),
                nn.Conv2d(64, 16, 3, 1, 1),
                nn.BatchNorm2d(16),
                nn.ReLU(),
                _StatsNet(),
                nn.Conv1d(2, 8, 5, 2, 2),
                nn.BatchNorm1d(8),
                nn.Conv1d(8, 1, 3, 1, 1),
                nn.BatchNorm1d(1),
                _View(),
            )
            for _ in range(10)
        )

    def forward(self, x):
        return _squash(torch.stack([c(x) for c in self.capsules], dim=-1), dim=-1)


class _RoutingLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.route_weights = nn.Parameter(torch.randn(2, 10, 4, 8))

    def forward(self, x):
        x = x.transpose(2, 1)
        priors = (self.route_weights[:, None] @ x[None, :, :, :, None]).transpose(1, 0)
        logits = torch.zeros_like(priors)
        for i in range(2):
            probs = F.softmax(logits, dim=2)
            outputs = _squash((probs * priors).sum(dim=2, keepdim=True), dim=3)
            if i != 1:
                logits = logits + priors * outputs
        return outputs.squeeze(-1).squeeze(2).transpose(2, 1).contiguous()


class Capsule(nn.Module):
    def __init__(self):
        super().__init__()
        self.vgg_ext = _VggExtractor()
        self.fea_ext = _FeatureExtractor()
        self.routing_stats = _RoutingLayer()

    def forward(self, x):
        z = self.routing_stats(self.fea_ext(self.vgg_ext.vgg_1(x)))
        return F.softmax(z, dim=-1).mean(dim=1)  # DFB's 'cls': mean class probabilities


def _capsule_score(m, x):
    """DeepfakeBench's ``prob``: a softmax over the mean class probabilities."""
    return _softmax_fake(m(x))


# --- F3Net, DeepfakeBench's FAD-only form (training/detectors/f3net_detector.py) -------------


def _dct_mat(size):
    return [
        [
            (np.sqrt(1.0 / size) if i == 0 else np.sqrt(2.0 / size))
            * np.cos((j + 0.5) * np.pi * i / size)
            for j in range(size)
        ]
        for i in range(size)
    ]


def _generate_filter(start, end, size):
    return [
        [0.0 if i + j > end or i + j < start else 1.0 for j in range(size)] for i in range(size)
    ]


class _Filter(nn.Module):
    def __init__(self, size, start, end):
        super().__init__()
        self.base = nn.Parameter(torch.tensor(_generate_filter(start, end, size)), False)
        self.learnable = nn.Parameter(torch.randn(size, size) * 0.1)

    def forward(self, x):
        return x * (self.base + 2.0 * torch.sigmoid(self.learnable) - 1.0)


class _FADHead(nn.Module):
    def __init__(self, size):
        super().__init__()
        d = torch.tensor(_dct_mat(size)).float()
        self._DCT_all = nn.Parameter(d, requires_grad=False)
        self._DCT_all_T = nn.Parameter(d.T.contiguous(), requires_grad=False)
        self.filters = nn.ModuleList(
            [
                _Filter(size, 0, size // 2.82),
                _Filter(size, size // 2.82, size // 2),
                _Filter(size, size // 2, size * 2),
                _Filter(size, 0, size * 2),
            ]
        )

    def forward(self, x):
        freq = self._DCT_all @ x @ self._DCT_all_T
        ys = [self._DCT_all_T @ f(freq) @ self._DCT_all for f in self.filters]
        return torch.cat(ys, dim=1)


class F3NetDFB(nn.Module):
    def __init__(self, size: int = DFB_SIZE):
        super().__init__()
        self.backbone = Xception(inc=12, dropout=0.5)
        self.FAD_head = _FADHead(size)

    def forward(self, x):
        return self.backbone.classifier(self.backbone.features(self.FAD_head(x)))


# --- SRM (Luo et al. 2021; training/detectors/srm_detector.py) -------------------------------

_SRM_FILTERS = (
    np.array([[0, 0, 0, 0, 0], [0, -1, 2, -1, 0], [0, 2, -4, 2, 0], [0, -1, 2, -1, 0], [0] * 5])
    / 4.0,
    np.array(
        [
            [-1, 2, -2, 2, -1],
            [2, -6, 8, -6, 2],
            [-2, 8, -12, 8, -2],
            [2, -6, 8, -6, 2],
            [-1, 2, -2, 2, -1],
        ]
    )
    / 12.0,
    np.array([[0] * 5, [0] * 5, [0, 1, -2, 1, 0], [0] * 5, [0] * 5]) / 2.0,
)


class _SRMSimple(nn.Module):
    def __init__(self, inc=3):
        super().__init__()
        filters = np.repeat(np.array([[f] for f in _SRM_FILTERS]), inc, axis=1)
        self.kernel = nn.Parameter(torch.FloatTensor(filters), requires_grad=False)

    def forward(self, x):
        return F.hardtanh(F.conv2d(x, self.kernel, padding=2), -3, 3)


class _SRMSeparate(nn.Module):
    def __init__(self, inc, outc):
        super().__init__()
        self.inc = inc
        filters = np.repeat(np.array([[f] for f in _SRM_FILTERS]), inc, axis=0)
        self.kernel = nn.Parameter(torch.FloatTensor(filters), requires_grad=False)
        self.out_conv = nn.Sequential(
            nn.Conv2d(3 * inc, outc, 1, 1, 0, 1, 1, bias=False),
            nn.BatchNorm2d(outc),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        out = F.hardtanh(F.conv2d(x, self.kernel, padding=2, groups=self.inc), -3, 3)
        return self.out_conv(out)


class _SpatialAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 1, 7, padding=3, bias=False)

    def forward(self, x):
        x = torch.cat([x.mean(1, keepdim=True), x.amax(1, keepdim=True)], 1)
        return torch.sigmoid(self.conv(x))


class _ChannelAttention(nn.Module):
    def __init__(self, planes, ratio):
        super().__init__()
        self.sharedMLP = nn.Sequential(
            nn.Conv2d(planes, planes // ratio, 1, bias=False),
            nn.ReLU(),
            nn.Conv2d(planes // ratio, planes, 1, bias=False),
        )

    def forward(self, x):
        avg = self.sharedMLP(F.adaptive_avg_pool2d(x, 1))
        mx = self.sharedMLP(F.adaptive_max_pool2d(x, 1))
        return torch.sigmoid(avg + mx)


class _DualCMA(nn.Module):
    def __init__(self, in_dim, size, ratio=8):
        super().__init__()
        r = in_dim // ratio
        self.key_conv1 = nn.Conv2d(in_dim, r, 1)
        self.key_conv2 = nn.Conv2d(in_dim, r, 1)
        self.key_conv_share = nn.Conv2d(r, r, 1)
        self.linear1 = nn.Linear(size * size, size * size)
        self.linear2 = nn.Linear(size * size, size * size)
        self.value_conv1 = nn.Conv2d(in_dim, in_dim, 1)
        self.gamma1 = nn.Parameter(torch.zeros(1))
        self.value_conv2 = nn.Conv2d(in_dim, in_dim, 1)
        self.gamma2 = nn.Parameter(torch.zeros(1))

    def forward(self, x, y):
        b, c, h, w = x.shape
        k1 = self.key_conv_share(self.key_conv1(x)).view(b, -1, h * w).permute(0, 2, 1)
        k2 = self.key_conv_share(self.key_conv2(y)).view(b, -1, h * w)
        energy = torch.bmm(k1, k2)
        att1 = F.softmax(self.linear1(energy), dim=-1)
        att2 = F.softmax(self.linear2(energy.permute(0, 2, 1)), dim=-1)
        v2 = self.value_conv2(y).view(b, -1, h * w)
        out_x = self.gamma1 * torch.bmm(v2, att1.permute(0, 2, 1)).view(b, c, h, w) + x
        v1 = self.value_conv1(x).view(b, -1, h * w)
        out_y = self.gamma2 * torch.bmm(v1, att2.permute(0, 2, 1)).view(b, c, h, w) + y
        return out_x, out_y


class _GaussianSmoothing(nn.Module):  # built by DFB's SRM detector, never called
    def __init__(self, channels=3, k=7, sigma=0.8):
        super().__init__()
        g = torch.arange(k, dtype=torch.float32)
        g = torch.exp(-(((g - (k - 1) / 2) / sigma) ** 2) / 2)
        kernel = g[:, None] * g[None, :]
        self.register_buffer("weight", (kernel / kernel.sum()).repeat(channels, 1, 1, 1))


class SRM(nn.Module):
    def __init__(self, size: int = DFB_SIZE):
        super().__init__()
        self.backbone_rgb = Xception()
        self.backbone_srm = Xception()
        self.blur = _GaussianSmoothing()
        self.srm_conv0 = _SRMSimple(3)
        self.srm_conv1 = _SRMSeparate(32, 32)
        self.srm_conv2 = _SRMSeparate(64, 64)
        self.relu = nn.ReLU(inplace=True)
        self.srm_sa = nn.Module()
        self.srm_sa.srm = _SRMSimple()
        self.srm_sa.conv = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2, 0, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
        )
        self.srm_sa.pa = _SpatialAttention()
        self.srm_sa_post = nn.Sequential(nn.BatchNorm2d(64), nn.ReLU(inplace=True))
        side = _xception_entry_side(size)
        self.dual_cma0 = _DualCMA(728, side)
        self.dual_cma1 = _DualCMA(728, side)
        self.fusion = nn.Module()
        self.fusion.convblk = nn.Sequential(
            nn.Conv2d(4096, 2048, 1, 1, 0, bias=False), nn.BatchNorm2d(2048), nn.ReLU()
        )
        self.fusion.ca = _ChannelAttention(2048, 16)

    def forward(self, x):
        rgb, noise = self.backbone_rgb, self.backbone_srm
        srm = self.srm_conv0(x)
        x = rgb.fea_part1_0(x)
        y = self.relu(noise.fea_part1_0(srm) + self.srm_conv1(x))
        x = rgb.fea_part1_1(x)
        y = self.relu(noise.fea_part1_1(y) + self.srm_conv2(x))
        att = self.srm_sa.pa(self.srm_sa.conv(self.srm_sa.srm(srm)))
        x = self.srm_sa_post(x * att + x)
        x, y = rgb.fea_part2(x), noise.fea_part2(y)
        x, y = self.dual_cma0(x, y)
        x, y = rgb.fea_part3(x), noise.fea_part3(y)
        x, y = self.dual_cma1(x, y)
        x, y = rgb.fea_part4(x), noise.fea_part4(y)
        x, y = rgb.fea_part5(x), noise.fea_part5(y)
        fuse = self.fusion.convblk(torch.cat((x, y), dim=1))
        fuse = fuse * self.fusion.ca(fuse)
        return rgb.classifier(fuse)


def _xception_entry_side(size: int) -> int:
    side = (size - 3) // 2 + 1  # conv1, stride 2, no padding
    side = side - 2  # conv2, no padding
    for _ in range(3):  # blocks 1-3, max-pool 3/2 padding 1
        side = (side - 1) // 2 + 1
    return side


# --- FFD and SPSL (training/detectors/ffd_detector.py, spsl_detector.py) ------------------


class FFD(_Backboned):
    """FFD with its regression map (``maptype: reg``): a sigmoid mask after block 7."""

    def __init__(self):
        super().__init__(Xception())
        self.map = nn.Module()
        self.map.c = nn.Module()
        self.map.c.conv1 = nn.Conv2d(728, 728, 3, 1, 1, groups=728, bias=False)
        self.map.c.pointwise = nn.Conv2d(728, 1, 1, bias=False)

    def forward(self, x):
        b = self.backbone
        x = b.fea_part3(b.fea_part2(b.fea_part1_1(b.fea_part1_0(x))))
        x = x * torch.sigmoid(self.map.c.pointwise(self.map.c.conv1(x)))
        return b.classifier(b.fea_part5(b.fea_part4(x)))


def _phase_without_amplitude(img):
    grey = torch.mean(img, dim=1, keepdim=True)
    phase = torch.angle(torch.fft.fftn(grey, dim=(-1, -2)))
    return torch.real(torch.fft.ifftn(torch.exp(1j * phase), dim=(-1, -2)))


def _spsl_score(m, x):
    features = torch.cat((x, _phase_without_amplitude(x)), dim=1)
    return _softmax_fake(m.backbone.classifier(m.backbone.features(features)))


# --- Face X-ray (training/detectors/facexray_detector.py, networks/cls_hrnet.py) ------------
# cls_hrnet is the official HRNet-Image-Classification code; timm's ``hrnet_w48`` is its port
# with the same parameter names but the ImageNet classifier (cls_hrnet's ``fc``, timm's
# ``classifier``), so its modules are borrowed, the classifier renamed and DFB's ``features``
# rewritten. The ImageNet head (incre/downsample modules, final layer, fc) is built and saved.


def _cls_hrnet_w48() -> nn.Module:
    net = timm.create_model("hrnet_w48", pretrained=False)
    net.fc = net.classifier  # nn.Linear(2048, 1000), as cls_hrnet names it
    del net.classifier
    return net


class FaceXray(nn.Module):
    def __init__(self, size: int = DFB_SIZE):
        super().__init__()
        self.backbone = _cls_hrnet_w48()
        self.post_process = nn.Sequential(
            nn.Conv2d(720, 256, 3, 1, 1),
            nn.BatchNorm2d(256),
            nn.ReLU(),
            nn.Conv2d(256, 128, 3, 1, 1),
            nn.BatchNorm2d(128),
            nn.ReLU(),
            nn.Conv2d(128, 1, 1, 1, 0),
            nn.Upsample(size=(size, size), mode="bilinear", align_corners=True),
        )
        self.fc = nn.Sequential(
            nn.Linear((size // 2) ** 2, 1024),
            nn.BatchNorm1d(1024),
            nn.ReLU(),
            nn.Linear(1024, 128),
            nn.BatchNorm1d(128),
            nn.ReLU(),
            nn.Linear(128, 2),
        )
        self.size = size

    def features(self, x):
        b = self.backbone
        x = b.act1(b.bn1(b.conv1(x)))
        x = b.layer1(b.act2(b.bn2(b.conv2(x))))
        ys = b.stage2([t(x) for t in b.transition1])
        for transition, stage in ((b.transition2, b.stage3), (b.transition3, b.stage4)):
            xs = [
                ys[i] if isinstance(t, nn.Identity) else t(ys[-1]) for i, t in enumerate(transition)
            ]
            ys = stage(xs)
        x0, x1, x2, x3 = ys
        size = x0.shape[-2:]
        ups = [F.interpolate(t, size=size, mode="bilinear") for t in (x1, x2, x3)]
        return torch.cat([x0, *ups], 1)

    def forward(self, x):
        mask = self.post_process(self.features(x))
        return self.fc(F.adaptive_avg_pool2d(mask, self.size // 2).flatten(1))


# --- the models ---------------------------------------------------------------------------


def build(model: str, size: int = DFB_SIZE):
    """``(module, score)`` for DeepfakeBench's ``model`` at ``size`` px."""
    if model in ("xception", "core", "fwa"):  # DFB's CORE and FWA are Xceptions
        net = _Backboned(Xception())
        return net, lambda m, x: _softmax_fake(m.backbone.classifier(m.backbone.features(x)))
    if model == "spsl":
        return _Backboned(Xception(inc=4)), _spsl_score
    if model == "ffd":
        return FFD(), lambda m, x: _softmax_fake(m(x))
    if model == "meso4":
        return _Backboned(Meso4(size)), lambda m, x: _softmax_fake(m.backbone(x))
    if model == "meso4Inception":
        return _Backboned(MesoInception4(size)), lambda m, x: _softmax_fake(m.backbone(x))
    if model == "efficientnetb4":
        return _Backboned(EfficientNetB4()), lambda m, x: _softmax_fake(m.backbone(x))
    if model == "sbi":  # softmax over its three classes, class 1 (sbi_detector.py's forward)
        return _Backboned(EfficientNetB4(num_classes=3)), lambda m, x: _softmax_fake(m.backbone(x))
    if model == "multi_attention":
        return MultiAttention(), lambda m, x: _softmax_fake(m(x))
    if model == "uia_vit":
        return UIAViT(size), lambda m, x: _softmax_fake(m(x))
    if model == "capsule_net":
        return Capsule(), _capsule_score
    if model == "f3net":
        return F3NetDFB(size), lambda m, x: _softmax_fake(m(x))
    if model == "srm":
        return SRM(size), lambda m, x: _softmax_fake(m(x))
    if model == "facexray":
        return FaceXray(size), lambda m, x: _softmax_fake(m(x))
    raise KeyError(model)


def constants(model: str, size: int) -> dict:
    """DeepfakeBench's fixed parameters of ``model`` at ``size`` px (built alone, cheaply)."""
    if model == "f3net":
        return {"FAD_head." + k: v for k, v in _FADHead(size).state_dict().items()}
    if model == "srm":
        return {
            "srm_conv0.kernel": _SRMSimple(3).kernel.data,
            "srm_conv1.kernel": _SRMSeparate(32, 32).kernel.data,
            "srm_conv2.kernel": _SRMSeparate(64, 64).kernel.data,
            "srm_sa.srm.kernel": _SRMSimple(3).kernel.data,
            "blur.weight": _GaussianSmoothing().weight,
        }
    return {}


def build_random(model: str, size: int, seed: int):
    """``(module, score, state)``: DeepfakeBench's ``model`` holding a random state dict from
    ``seed`` (built on the meta device, so nothing is initialised twice), its BatchNorm
    statistics those of :func:`dfb_inputs` of :func:`images` from ``seed``."""
    with torch.device("meta"):
        net, score = build(model, size)
    state = random_state(key_table(net), seed, constants(model, size))
    net.load_state_dict(state, assign=True)
    calibrate_batchnorm(net, score, size, seed, dfb_inputs(model, images(size, seed)))
    return net.eval(), score, net.state_dict()


def images(size: int, seed: int, n: int = 4) -> np.ndarray:
    """``n`` random uint8 RGB images (n, size, size, 3) from ``seed``."""
    return np.random.default_rng(seed).integers(0, 256, (n, size, size, 3), dtype=np.uint8)


def dfb_inputs(model: str, batch: np.ndarray) -> torch.Tensor:
    """uint8 RGB images as DeepfakeBench's data loader gives them to ``model``: ToTensor (to
    [0, 1], channels first), then Normalize with its config's ``mean`` and ``std``."""
    x = torch.from_numpy(batch).permute(0, 3, 1, 2).float() / 255.0
    mean, std = (torch.tensor(v).view(1, 3, 1, 1) for v in normalisation(model))
    return (x - mean) / std


def calibration_images(size: int, seed: int, n: int = 4) -> torch.Tensor:
    """Random images in [-1, 1]; on other images a deep network's BatchNorm statistics from a
    few images extrapolate poorly (EfficientNet's activations then grow block by block)."""
    return torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(seed)) * 2 - 1


VAR_FLOOR = 0.05


def calibrate_batchnorm(
    net: nn.Module, score, size: int, seed: int, x: torch.Tensor | None = None
) -> None:
    """Set every BatchNorm's running statistics to those of its own input when the network,
    in evaluation mode, scores one batch of images ``x`` (by default
    :func:`calibration_images`): each layer is set, in the order the forward pass reaches it,
    from the input that the layers before it, already set, give it. Random weights then give
    normalised activations and scores that depend on the input all the way through (random
    statistics, or statistics from a training-mode pass whose tiny late maps normalise
    differently, let deep networks saturate). A BatchNorm used twice keeps its first input's."""
    norms = [m for m in net.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    done: set[int] = set()

    def set_from_input(module, inputs):
        if id(module) in done:
            return
        done.add(id(module))
        t = inputs[0].detach()
        dims = [d for d in range(t.dim()) if d != 1]
        module.running_mean.copy_(t.mean(dim=dims))
        # a floor: a channel nearly constant over the batch (a late 1 × 1 map, a dead ReLU)
        # would otherwise amplify float rounding by up to 1/√eps at every layer
        module.running_var.copy_(t.var(dim=dims, unbiased=False).clamp(min=VAR_FLOOR))

    hooks = [m.register_forward_pre_hook(set_from_input) for m in norms]
    if x is None:
        x = calibration_images(size, seed)
    net.eval()
    try:
        with torch.no_grad():
            score(net, x)
    finally:
        for hook in hooks:
            hook.remove()


MODELS = (
    "xception",
    "core",
    "fwa",
    "spsl",
    "ffd",
    "meso4",
    "meso4Inception",
    "efficientnetb4",
    "sbi",
    "capsule_net",
    "f3net",
    "srm",
    "facexray",
    "multi_attention",
    "uia_vit",
)
CONSTANTS = r"(_DCT_all|_DCT_all_T|filters\.\d+\.base|kernel|blur\.weight)$"


def key_table(net: nn.Module) -> dict:
    return {k: list(v.shape) for k, v in net.state_dict().items()}


def random_state(keys: dict, seed: int, constants: dict) -> dict:
    """A state dict with DeepfakeBench's names and shapes: random values from ``seed`` (BN
    variances positive), DeepfakeBench's fixed constants kept."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for key, shape in keys.items():
        if re.search(CONSTANTS, key):
            out[key] = constants[key].clone()
        elif key.endswith("num_batches_tracked"):
            out[key] = torch.tensor(7)
        elif key.endswith("route_weights"):  # DFB's torch.randn initialisation
            out[key] = torch.randn(shape, generator=g)
        elif key.endswith("running_var"):
            out[key] = torch.rand(shape, generator=g) + 0.5
        else:
            scale = 0.5 if key.endswith(("running_mean", "bias")) else None
            t = torch.randn(shape, generator=g)
            if scale is None:  # keep activations O(1): fan-in scaled weights
                fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
                t = t / math.sqrt(max(fan_in, 1)) if len(shape) > 1 else 1.0 + 0.2 * t
            else:
                t = scale * t
            out[key] = t
    return out


def main() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    for model in MODELS:
        size = RESOLUTION.get(model, DFB_SIZE)
        net, _ = build(model, size)
        mean, std = normalisation(model)
        table = {
            "model": model,
            "source": "SCLBD/DeepfakeBench training/detectors, training/networks, "
            f"training/config/detector/{model}.yaml",
            "resolution": size,
            "mean": list(mean),
            "std": list(std),
            "parameters": sum(p.numel() for p in net.parameters()),
            "state_dict": key_table(net),
        }
        (DATA / f"{model}.json").write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
