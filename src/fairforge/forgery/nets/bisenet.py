"""The BiSeNet face parser trained on CelebAMask-HQ, as zllrunning/face-parsing.PyTorch
releases it.

The release is ``79999_iter.pth`` (the "pre-trained model" linked from the repository's
README, Google Drive; the repository's ``test.py`` loads it from ``res/cp``): the state dict
of ``model.py``'s ``BiSeNet(n_classes=19)``, saved by ``train.py`` without the distributed
wrapper. Its ResNet-18 backbone is a sub-module (``cp.resnet``), so the backbone's weights
are in the same file: the ImageNet download the authors' ``Resnet18`` makes when built is
only the initialisation for training, and nothing is downloaded here.

Pre-processing is the authors' ``test.py``: the image resized to 512 x 512 by PIL's bilinear
filter, scaled to [0, 1] and normalised with ImageNet's mean and standard deviation; the
parsing is the arg-max of the main output (the first of the three the network returns,
bilinearly up-sampled with aligned corners to the input size). The two auxiliary heads
(``conv_out16``, ``conv_out32``, used only by the training loss) are built so that the
release loads exactly, and not run.

Class k of the output is :data:`CLASSES` [k]: background, then ``prepropess_data.py``'s
attribute list (note: another order than MaskGAN's label maps;
:class:`FaceParser` converts to :data:`~fairforge.forgery.parsing.CELEBAMASK_LABELS`).

Parameter names follow the release; written from reading the authors' ``model.py`` and
``resnet.py``. Global average pooling is written as a mean (the authors pool with a kernel the
size of the map).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from fairforge.checkpoints import read_state_dict

from ..parsing import CELEBAMASK_LABELS
from . import load_released

CLASSES = (
    "background",
    "skin",
    "l_brow",
    "r_brow",
    "l_eye",
    "r_eye",
    "eye_g",
    "l_ear",
    "r_ear",
    "ear_r",
    "nose",
    "mouth",
    "u_lip",
    "l_lip",
    "neck",
    "neck_l",
    "cloth",
    "hair",
    "hat",
)
INPUT_SIZE = 512
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


class ConvBNReLU(nn.Module):
    def __init__(self, cin: int, cout: int, ks: int = 3, stride: int = 1, padding: int = 1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, ks, stride, padding, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn(self.conv(x)))


def _pool(x: torch.Tensor) -> torch.Tensor:
    return x.mean((2, 3), keepdim=True)


# --- ResNet-18 (resnet.py) ----------------------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if cin != cout or stride != 1:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        shortcut = x if self.downsample is None else self.downsample(x)
        return F.relu(shortcut + residual)


def _layer(cin: int, cout: int, stride: int) -> nn.Sequential:
    return nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1))


class Resnet18(nn.Module):
    """Features at 1/8, 1/16 and 1/32 of the input (no classifier)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = _layer(64, 64, 1)
        self.layer2 = _layer(64, 128, 2)
        self.layer3 = _layer(128, 256, 2)
        self.layer4 = _layer(256, 512, 2)

    def forward(self, x: torch.Tensor):
        x = self.layer1(self.maxpool(F.relu(self.bn1(self.conv1(x)))))
        feat8 = self.layer2(x)
        feat16 = self.layer3(feat8)
        return feat8, feat16, self.layer4(feat16)


# --- BiSeNet (model.py) ---------------------------------------------------------------------


class AttentionRefinementModule(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv = ConvBNReLU(cin, cout)
        self.conv_atten = nn.Conv2d(cout, cout, 1, bias=False)
        self.bn_atten = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feat = self.conv(x)
        return feat * torch.sigmoid(self.bn_atten(self.conv_atten(_pool(feat))))


class ContextPath(nn.Module):
    def __init__(self):
        super().__init__()
        self.resnet = Resnet18()
        self.arm16 = AttentionRefinementModule(256, 128)
        self.arm32 = AttentionRefinementModule(512, 128)
        self.conv_head32 = ConvBNReLU(128, 128)
        self.conv_head16 = ConvBNReLU(128, 128)
        self.conv_avg = ConvBNReLU(512, 128, ks=1, padding=0)

    def forward(self, x: torch.Tensor):
        feat8, feat16, feat32 = self.resnet(x)
        avg = self.conv_avg(_pool(feat32))  # broadcast: the authors up-sample 1x1 by nearest
        up32 = F.interpolate(self.arm32(feat32) + avg, feat16.shape[2:], mode="nearest")
        up32 = self.conv_head32(up32)
        up16 = F.interpolate(self.arm16(feat16) + up32, feat8.shape[2:], mode="nearest")
        return feat8, self.conv_head16(up16), up32


class FeatureFusionModule(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.convblk = ConvBNReLU(cin, cout, ks=1, padding=0)
        self.conv1 = nn.Conv2d(cout, cout // 4, 1, bias=False)
        self.conv2 = nn.Conv2d(cout // 4, cout, 1, bias=False)

    def forward(self, fsp: torch.Tensor, fcp: torch.Tensor) -> torch.Tensor:
        feat = self.convblk(torch.cat([fsp, fcp], dim=1))
        atten = torch.sigmoid(self.conv2(F.relu(self.conv1(_pool(feat)))))
        return feat * atten + feat


class BiSeNetOutput(nn.Module):
    def __init__(self, cin: int, mid: int, n_classes: int):
        super().__init__()
        self.conv = ConvBNReLU(cin, mid)
        self.conv_out = nn.Conv2d(mid, n_classes, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_out(self.conv(x))


class BiSeNet(nn.Module):
    """``forward(x)``: the main output's class scores at the input's size."""

    def __init__(self, n_classes: int = len(CLASSES)):
        super().__init__()
        self.cp = ContextPath()
        self.ffm = FeatureFusionModule(256, 256)
        self.conv_out = BiSeNetOutput(256, 256, n_classes)
        self.conv_out16 = BiSeNetOutput(128, 64, n_classes)  # training only
        self.conv_out32 = BiSeNetOutput(128, 64, n_classes)  # training only

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feat8, cp8, _ = self.cp(x)  # the authors' "spatial path" is the 1/8 backbone feature
        out = self.conv_out(self.ffm(feat8, cp8))
        return F.interpolate(out, x.shape[2:], mode="bilinear", align_corners=True)


def preprocess(img: np.ndarray) -> torch.Tensor:
    """The authors' ``test.py`` input: (1, 3, 512, 512) from a uint8 RGB image."""
    from PIL import Image

    resized = Image.fromarray(np.ascontiguousarray(img)).resize(
        (INPUT_SIZE, INPUT_SIZE), Image.BILINEAR
    )
    x = torch.from_numpy(np.asarray(resized, np.float32) / 255.0).permute(2, 0, 1)
    mean = torch.tensor(MEAN)[:, None, None]
    std = torch.tensor(STD)[:, None, None]
    return ((x - mean) / std)[None]


class FaceParser:
    """The released parser on a device: ``parser(img)`` is the 512 x 512 uint8 map of
    ``img`` (uint8 RGB) in :data:`~fairforge.forgery.parsing.CELEBAMASK_LABELS` (MaskGAN's
    label order); ``parser(img, (w, h))`` scales it to ``w`` x ``h`` by PIL's nearest
    neighbour, as MaskGAN's demo scales a label map."""

    def __init__(self, path, what: str, device: str = "cpu"):
        self.device = torch.device(device)
        self.net = load_released(BiSeNet, read_state_dict(path, what), what, device)
        self.to_celebamask = np.array([CELEBAMASK_LABELS.index(c) for c in CLASSES], np.uint8)

    def __call__(self, img: np.ndarray, size: tuple[int, int] | None = None) -> np.ndarray:
        with torch.inference_mode():
            scores = self.net(preprocess(img).to(self.device))
        labels = self.to_celebamask[scores[0].argmax(0).cpu().numpy()]
        if size is None or tuple(size) == labels.shape[::-1]:
            return labels
        from PIL import Image

        return np.array(Image.fromarray(labels).resize(tuple(size), Image.NEAREST))
