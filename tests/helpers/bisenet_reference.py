"""A test-side restatement of the BiSeNet face parser of zllrunning/face-parsing.PyTorch
(``model.py``, ``resnet.py``, ``test.py``, ``prepropess_data.py``), written from reading them.

It exists to produce what fairforge's parser (:mod:`fairforge.forgery.nets.bisenet`) must
reproduce: the keys and shapes of ``79999_iter.pth`` (``BiSeNet(n_classes=19).state_dict()``
as ``train.py`` saves it, without the distributed wrapper) and the parser's outputs after
``test.py``'s pre-processing. The modules keep the authors' attribute names, order of
operations and quirks: global pooling by ``F.avg_pool2d`` with the map's size, the 1x1
context vector up-sampled by nearest neighbour, in-place ReLUs, three outputs of which
``test.py`` keeps the first. Left out: the weight initialisation (``init_weight``, whose
backbone part downloads ImageNet's ResNet-18; a test assigns its own weights), ``get_params``
and the unused ``SpatialPath``.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
import torchvision.transforms as transforms
from PIL import Image
from torch import nn

# prepropess_data.py: label k + 1 is atts[k], 0 the background
ATTS = ["skin", "l_brow", "r_brow", "l_eye", "r_eye", "eye_g", "l_ear", "r_ear", "ear_r",
        "nose", "mouth", "u_lip", "l_lip", "neck", "neck_l", "cloth", "hair", "hat"]  # fmt: skip

# --- resnet.py ------------------------------------------------------------------------------


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    def __init__(self, in_chan, out_chan, stride=1):
        super().__init__()
        self.conv1 = conv3x3(in_chan, out_chan, stride)
        self.bn1 = nn.BatchNorm2d(out_chan)
        self.conv2 = conv3x3(out_chan, out_chan)
        self.bn2 = nn.BatchNorm2d(out_chan)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if in_chan != out_chan or stride != 1:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_chan, out_chan, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(out_chan),
            )

    def forward(self, x):
        residual = F.relu(self.bn1(self.conv1(x)))
        residual = self.bn2(self.conv2(residual))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(shortcut + residual)


def create_layer_basic(in_chan, out_chan, bnum, stride=1):
    layers = [BasicBlock(in_chan, out_chan, stride=stride)]
    layers += [BasicBlock(out_chan, out_chan, stride=1) for _ in range(bnum - 1)]
    return nn.Sequential(*layers)


class Resnet18(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = create_layer_basic(64, 64, bnum=2, stride=1)
        self.layer2 = create_layer_basic(64, 128, bnum=2, stride=2)
        self.layer3 = create_layer_basic(128, 256, bnum=2, stride=2)
        self.layer4 = create_layer_basic(256, 512, bnum=2, stride=2)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        feat8 = self.layer2(x)
        feat16 = self.layer3(feat8)
        feat32 = self.layer4(feat16)
        return feat8, feat16, feat32


# --- model.py ---------------------------------------------------------------------------------


class ConvBNReLU(nn.Module):
    def __init__(self, in_chan, out_chan, ks=3, stride=1, padding=1):
        super().__init__()
        self.conv = nn.Conv2d(
            in_chan, out_chan, kernel_size=ks, stride=stride, padding=padding, bias=False
        )
        self.bn = nn.BatchNorm2d(out_chan)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class BiSeNetOutput(nn.Module):
    def __init__(self, in_chan, mid_chan, n_classes):
        super().__init__()
        self.conv = ConvBNReLU(in_chan, mid_chan, ks=3, stride=1, padding=1)
        self.conv_out = nn.Conv2d(mid_chan, n_classes, kernel_size=1, bias=False)

    def forward(self, x):
        return self.conv_out(self.conv(x))


class AttentionRefinementModule(nn.Module):
    def __init__(self, in_chan, out_chan):
        super().__init__()
        self.conv = ConvBNReLU(in_chan, out_chan, ks=3, stride=1, padding=1)
        self.conv_atten = nn.Conv2d(out_chan, out_chan, kernel_size=1, bias=False)
        self.bn_atten = nn.BatchNorm2d(out_chan)
        self.sigmoid_atten = nn.Sigmoid()

    def forward(self, x):
        feat = self.conv(x)
        atten = F.avg_pool2d(feat, feat.size()[2:])
        atten = self.sigmoid_atten(self.bn_atten(self.conv_atten(atten)))
        return torch.mul(feat, atten)


class ContextPath(nn.Module):
    def __init__(self):
        super().__init__()
        self.resnet = Resnet18()
        self.arm16 = AttentionRefinementModule(256, 128)
        self.arm32 = AttentionRefinementModule(512, 128)
        self.conv_head32 = ConvBNReLU(128, 128, ks=3, stride=1, padding=1)
        self.conv_head16 = ConvBNReLU(128, 128, ks=3, stride=1, padding=1)
        self.conv_avg = ConvBNReLU(512, 128, ks=1, stride=1, padding=0)

    def forward(self, x):
        feat8, feat16, feat32 = self.resnet(x)
        H8, W8 = feat8.size()[2:]
        H16, W16 = feat16.size()[2:]
        H32, W32 = feat32.size()[2:]
        avg = self.conv_avg(F.avg_pool2d(feat32, feat32.size()[2:]))
        avg_up = F.interpolate(avg, (H32, W32), mode="nearest")
        feat32_sum = self.arm32(feat32) + avg_up
        feat32_up = self.conv_head32(F.interpolate(feat32_sum, (H16, W16), mode="nearest"))
        feat16_sum = self.arm16(feat16) + feat32_up
        feat16_up = self.conv_head16(F.interpolate(feat16_sum, (H8, W8), mode="nearest"))
        return feat8, feat16_up, feat32_up


class FeatureFusionModule(nn.Module):
    def __init__(self, in_chan, out_chan):
        super().__init__()
        self.convblk = ConvBNReLU(in_chan, out_chan, ks=1, stride=1, padding=0)
        self.conv1 = nn.Conv2d(
            out_chan, out_chan // 4, kernel_size=1, stride=1, padding=0, bias=False
        )
        self.conv2 = nn.Conv2d(
            out_chan // 4, out_chan, kernel_size=1, stride=1, padding=0, bias=False
        )
        self.relu = nn.ReLU(inplace=True)
        self.sigmoid = nn.Sigmoid()

    def forward(self, fsp, fcp):
        feat = self.convblk(torch.cat([fsp, fcp], dim=1))
        atten = F.avg_pool2d(feat, feat.size()[2:])
        atten = self.sigmoid(self.conv2(self.relu(self.conv1(atten))))
        return torch.mul(feat, atten) + feat


class BiSeNet(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.cp = ContextPath()
        self.ffm = FeatureFusionModule(256, 256)
        self.conv_out = BiSeNetOutput(256, 256, n_classes)
        self.conv_out16 = BiSeNetOutput(128, 64, n_classes)
        self.conv_out32 = BiSeNetOutput(128, 64, n_classes)

    def forward(self, x):
        H, W = x.size()[2:]
        feat_res8, feat_cp8, feat_cp16 = self.cp(x)
        feat_fuse = self.ffm(feat_res8, feat_cp8)
        feat_out = self.conv_out(feat_fuse)
        feat_out16 = self.conv_out16(feat_cp8)
        feat_out32 = self.conv_out32(feat_cp16)
        up = dict(mode="bilinear", align_corners=True)
        return (
            F.interpolate(feat_out, (H, W), **up),
            F.interpolate(feat_out16, (H, W), **up),
            F.interpolate(feat_out32, (H, W), **up),
        )


# --- test.py ----------------------------------------------------------------------------------


def reference_parse(net, img: Image.Image) -> tuple[torch.Tensor, np.ndarray]:
    """``evaluate``'s steps on one PIL image: the main output's scores and the parsing."""
    to_tensor = transforms.Compose(
        [transforms.ToTensor(), transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]
    )
    image = img.resize((512, 512), Image.BILINEAR)
    x = torch.unsqueeze(to_tensor(image), 0)
    with torch.no_grad():
        out = net(x)[0]
    return out, out.squeeze(0).cpu().numpy().argmax(0)


# --- random releases -----------------------------------------------------------------------------

# The classes a random parser is tilted towards (its 0-based output channels)
FACE = ["skin", "nose", "l_eye", "r_eye", "l_brow", "r_brow", "u_lip", "l_lip", "mouth"]


def random_bisenet(seed: int = 0) -> BiSeNet:
    """BiSeNet(19) with every parameter and BatchNorm statistic random (evaluation mode)."""
    from maskgan_reference import GAIN
    from official_support import empty, loaded, random_state

    build = lambda: BiSeNet(19)  # noqa: E731
    return loaded(build, random_state(empty(build), seed, GAIN))


def random_face_parser(seed: int = 0, skin: float | None = None) -> BiSeNet:
    """A random BiSeNet whose main output is a patchwork of skin and face parts, which
    FairFD's edit can act on. The last hidden layer's channel 0 is made the constant 1 (zero
    weights, BatchNorm scale 0 and shift 1). The face parts' rows of the last layer keep
    their random weights on the other channels, less their component along the mean
    feature of a noise image (random features share a large common part, which would let
    one class win everywhere); skin scores ``skin`` on the constant channel (default: the
    median over the noise image of the parts' best score, about half of a face crop); the
    other classes' rows are negative on the non-negative features."""
    net = random_bisenet(seed)
    labels = ["background", *ATTS]
    face = [labels.index(n) for n in FACE if n != "skin"]
    with torch.no_grad():
        hidden = net.conv_out.conv
        hidden.conv.weight[0] = 0.0
        hidden.bn.weight[0] = 0.0
        hidden.bn.bias[0] = 1.0
        noise = torch.randn(1, 3, 512, 512, generator=torch.Generator().manual_seed(seed))
        feat8, cp8, _ = net.cp(noise)
        feats = hidden(net.ffm(feat8, cp8))[0, 1:]
        w = net.conv_out.conv_out.weight[:, :, 0, 0]
        mean = feats.mean((1, 2))
        for k in face:
            w[k, 0] = 0.0
            w[k, 1:] -= (w[k, 1:] @ mean) / (mean @ mean) * mean
        if skin is None:
            skin = torch.einsum("kc,chw->khw", w[face, 1:], feats).max(0).values.median().item()
        for k, name in enumerate(labels):
            if name == "skin":
                w[k] = 0.0
                w[k, 0] = skin
            elif k not in face:
                w[k] = -w[k].abs()
    return net
