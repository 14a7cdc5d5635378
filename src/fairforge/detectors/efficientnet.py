"""EfficientNet-B4 (Tan & Le, ICML 2019), the classifier of Self-Blended Images (Shiohara &
Yamasaki, CVPR 2022) and of DeepfakeBench's ``efficientnetb4`` and ``sbi`` (``sbi_dfb``: its
three-class head and ImageNet normalisation).

Both SBI and DeepfakeBench build the network with ``efficientnet_pytorch``: TensorFlow's
"same" padding, fixed when the network is built for the image size it assumes, and BatchNorm
eps 1e-3. timm's ``tf_efficientnet_b4`` is the same network (same blocks, eps and
squeeze-excite widths) but pads dynamically; here its strided convolutions get static
padding computed the way efficientnet_pytorch does (:class:`StaticSamePadConv2d`):

``padding="same"``
    TF "same" padding for ``input_size`` (what SBI trains with at 380 px);
``padding="deepfakebench"``
    DeepfakeBench's network: its stem is replaced by an unpadded 3×3 convolution, and the
    other paddings stay those efficientnet_pytorch computed for B4's 380 px, whatever the input
    size (DeepfakeBench runs it at 256 px). Its checkpoints load exactly
    (:mod:`fairforge.detectors.deepfakebench`).

The self-blending of SBI is a training-data method, not part of the network: with
``online_forgery: sbi`` the training loop blends each real training face afresh every epoch
(:class:`fairforge.data.OnlineForgeryDataset`), as SBI trains (``configs/assessment.yaml``);
offline ``sbi`` fakes in ``train_methods`` work too. ``backbone`` picks another
``tf_efficientnet_*`` (``tf_efficientnet_b0`` for CPU-sized runs). The network is built with
random weights; SBI and DeepfakeBench start from ImageNet weights (``pretrained:``, or
``init: random`` to train without). SBI's training (SAM over SGD, 100 epochs, 380 px) is this
architecture's published recipe, selected as ``recipe: sbi`` (or ``published``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.auxiliary import AuxiliaryLossDetector
from fairforge.detectors.base import (
    DEEPFAKEBENCH_IMAGENET,
    DETECTORS,
    IMAGENET_MEAN,
    IMAGENET_STD,
    DeepfakeBenchLayout,
    Detector,
    PretrainedLayout,
    PretrainedTarget,
    stated_start,
)
from fairforge.recipes import Recipe

PADDINGS = ("same", "deepfakebench")
#: blocks per stage of EfficientNet-B4 (efficientnet_pytorch numbers its 32 blocks 0..31)
B4_REPEATS = (2, 4, 4, 6, 6, 8, 2)
# efficientnet_pytorch's names inside a block → timm's, in the first stage (expansion 1,
# timm's DepthwiseSeparableConv) and in the others (InvertedResidual)
_BLOCK_PARTS = {
    "_depthwise_conv": ("conv_dw", "conv_dw"),
    "_expand_conv": (None, "conv_pw"),
    "_bn0": (None, "bn1"),
    "_bn1": ("bn1", "bn2"),
    "_se_reduce": ("se.conv_reduce", "se.conv_reduce"),
    "_se_expand": ("se.conv_expand", "se.conv_expand"),
    "_project_conv": ("conv_pw", "conv_pwl"),
    "_bn2": ("bn2", "bn3"),
}
_TOP_PARTS = {"_conv_stem": "conv_stem", "_bn0": "bn1", "_conv_head": "conv_head", "_bn1": "bn2"}
_TOP_PARTS["_fc"] = "classifier"


def efficientnet_pytorch_to_timm(key: str, repeats: Sequence[int]) -> str | None:
    """timm's name for the tensor ``key`` of an efficientnet_pytorch EfficientNet
    (lukemelas/EfficientNet-PyTorch: ``_conv_stem.weight``, ``_blocks.7._expand_conv.weight``),
    whose stages hold ``repeats`` blocks; None when timm has no such tensor."""
    block = re.match(r"^_blocks\.(\d+)\.(\w+)\.(\w+)$", key)
    if block is None:
        top = re.match(r"^(\w+)\.(\w+)$", key)
        if top is None or top.group(1) not in _TOP_PARTS:
            return None
        return f"{_TOP_PARTS[top.group(1)]}.{top.group(2)}"
    index, part, leaf = int(block.group(1)), block.group(2), block.group(3)
    stage = 0
    while stage < len(repeats) and index >= repeats[stage]:
        index -= repeats[stage]
        stage += 1
    if stage >= len(repeats) or part not in _BLOCK_PARTS:
        return None
    name = _BLOCK_PARTS[part][0 if stage == 0 else 1]
    return f"blocks.{stage}.{index}.{name}.{leaf}" if name else None


def timm_names(state_keys, model: nn.Module) -> dict[str, str]:
    """``{file key: timm key}`` for a state dict's keys onto the timm EfficientNet ``model``:
    efficientnet_pytorch's names (keys starting ``_``) are translated with the model's own
    stage depths, timm's names are kept; a key with no timm counterpart keeps its name."""
    repeats = [len(stage) for stage in model.blocks]
    out = {}
    for key in state_keys:
        name = efficientnet_pytorch_to_timm(key, repeats) if key.startswith("_") else None
        out[key] = name or key
    return out


EFFICIENTNET_PYTORCH_SIZE = {"tf_efficientnet_b0": 224, "tf_efficientnet_b4": 380}


#: ImageNet EfficientNet-B4 with AdvProp, as the published models start, and its layout.
EFFICIENTNET_PRETRAINED = PretrainedLayout(
    (PretrainedTarget("backbone", names=timm_names),),
    "ImageNet EfficientNet-B4 with AdvProp: efficientnet_pytorch's adv-efficientnet-b4-44fb3a87.pth"
    " (what DeepfakeBench and the multi-attention authors start from) or timm's"
    " tf_efficientnet_b4.ap_in1k",
    "tf_efficientnet_b4.ap_in1k",
)

_SBI = "paper:SBI (Shiohara & Yamasaki 2022)"
#: Self-Blended Images' training (SAM over SGD, 100 epochs, lr falling linearly after 75).
SBI_RECIPE = Recipe(
    optimizer="sgd",
    sam=True,
    lr=1e-3,
    momentum=0.9,
    epochs=100,
    batch_size=32,
    input_size=380,
    schedule="linear_decay",
    decay_start=0.75,
    frames_train=8,
    frames_test=32,
    init="imagenet",
    source=_SBI,
    cite={"init": _SBI + ": ImageNet-pretrained EfficientNet-B4"},
)


def _effnet_key(match: re.Match) -> str:
    name = efficientnet_pytorch_to_timm(match.group(1), B4_REPEATS)
    return f"backbone.{name}" if name else f"<no counterpart: {match.group(0)}>"


#: DeepfakeBench's EfficientNet-B4 (efficientnet_pytorch) under ``backbone.efficientnet``.
EFFNET_DFB_RULES = ((r"^backbone\.efficientnet\.(.+)$", _effnet_key),)
# its ``efficientnetb4`` backbone with the head ``last_layer`` (``sbi``'s too)
_EFFNETB4_DFB = DeepfakeBenchLayout(
    (
        (r"^backbone\.last_layer\.(?:1\.)?(weight|bias)$", r"backbone.classifier.\1"),
        *EFFNET_DFB_RULES,
    ),
    (r"^backbone\.adjust_channel\.",),
    head="backbone.classifier",
)
_DFB_START = stated_start("imagenet", DEEPFAKEBENCH_IMAGENET)


def same_pad(size: int, kernel: int, stride: int) -> tuple[int, int, int, int]:
    """TF "same" padding of a square input of ``size`` (left, right, top, bottom)."""
    out = math.ceil(size / stride)
    pad = max((out - 1) * stride + kernel - size, 0)
    return (pad // 2, pad - pad // 2, pad // 2, pad - pad // 2)


class StaticSamePadConv2d(nn.Conv2d):
    """A convolution with a fixed zero padding (efficientnet_pytorch's
    ``Conv2dStaticSamePadding``)."""

    def __init__(self, conv: nn.Conv2d, pad: tuple[int, int, int, int]):
        super().__init__(
            conv.in_channels,
            conv.out_channels,
            conv.kernel_size,
            conv.stride,
            0,
            conv.dilation,
            conv.groups,
            conv.bias is not None,
        )
        self.pad = pad
        with torch.no_grad():
            self.weight.copy_(conv.weight)
            if conv.bias is not None:
                self.bias.copy_(conv.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(F.pad(x, self.pad))


def _set(model: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, module)


def static_padding(model: nn.Module, size: int, unpadded_stem: bool = False) -> nn.Module:
    """Replace the dynamically padded convolutions of a timm ``tf_efficientnet`` by static
    ones, computed for ``size`` px in forward order as efficientnet_pytorch does."""
    from timm.layers import Conv2dSame  # see fairforge.detectors

    for name, conv in list(model.named_modules()):
        if not isinstance(conv, Conv2dSame):
            continue
        stride = conv.stride[0]
        if name == "conv_stem" and unpadded_stem:
            pad = (0, 0, 0, 0)
        else:
            pad = same_pad(size, conv.kernel_size[0], stride)
        _set(model, name, StaticSamePadConv2d(conv, pad))
        size = math.ceil(size / stride)
    return model


@DETECTORS.register(
    "efficientnet_b4", recipe=SBI_RECIPE, recipe_name="sbi", pretrained=EFFICIENTNET_PRETRAINED
)
class EfficientNetB4(Detector):
    default_input_size = 380
    mean = IMAGENET_MEAN
    std = IMAGENET_STD
    #: outputs of the network's head (one logit; DeepfakeBench's ``sbi``: three classes)
    num_classes = 1

    def __init__(
        self,
        input_size: int = 380,
        backbone: str = "tf_efficientnet_b4",
        drop_rate: float = 0.2,
        padding: str = "same",
    ):
        super().__init__()
        if padding not in PADDINGS:
            raise ValueError(f"efficientnet_b4 padding must be one of {PADDINGS}, got {padding!r}")
        if not backbone.startswith("tf_efficientnet"):
            raise ValueError(f"efficientnet_b4 needs a tf_efficientnet_* backbone, got {backbone}")
        self.input_size = input_size
        self.padding = padding
        import timm  # see fairforge.detectors

        net = timm.create_model(
            backbone, pretrained=False, num_classes=self.num_classes, drop_rate=drop_rate
        )
        if padding == "deepfakebench":
            size = EFFICIENTNET_PYTORCH_SIZE.get(backbone, 380)
            self.backbone = static_padding(net, size, unpadded_stem=True)
        else:
            self.backbone = static_padding(net, input_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x).squeeze(1)


@DETECTORS.register(
    "efficientnet_b4_dfb",
    recipe=_DFB_START,
    pretrained=EFFICIENTNET_PRETRAINED,
    deepfakebench={"efficientnetb4": _EFFNETB4_DFB},
)
class EfficientNetB4DFB(EfficientNetB4):
    """DeepfakeBench's ``efficientnetb4``: ``padding="deepfakebench"`` and its normalisation
    (mean = std = 0.5); its input size is DeepfakeBench's 256 px."""

    default_input_size = 256
    mean = (0.5, 0.5, 0.5)
    std = (0.5, 0.5, 0.5)

    def __init__(
        self,
        input_size: int = 256,
        backbone: str = "tf_efficientnet_b4",
        drop_rate: float = 0.0,
        padding: str = "deepfakebench",
    ):
        super().__init__(input_size, backbone, drop_rate, padding)


@DETECTORS.register(
    "sbi_dfb",
    recipe=_DFB_START,
    pretrained=EFFICIENTNET_PRETRAINED,
    deepfakebench={"sbi": _EFFNETB4_DFB},
)
class SBIDFB(EfficientNetB4DFB, AuxiliaryLossDetector):
    """DeepfakeBench's ``sbi`` as its config builds it (``training/config/detector/sbi.yaml``):
    the ``efficientnetb4`` network with a three-class head (``num_classes: 3``) and ImageNet
    normalisation. Only classes 0 (real) and 1 (fake) are ever labelled; its probability of
    "fake" is the softmax's class 1, so the logit returned is z₁ − log(e^z₀ + e^z₂) and its
    sigmoid is that probability exactly. The loss is DeepfakeBench's: cross-entropy over the
    three classes."""

    mean = IMAGENET_MEAN
    std = IMAGENET_STD
    num_classes = 3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        classes = self.backbone(x)
        others = torch.cat((classes[:, :1], classes[:, 2:]), dim=1)
        return self._keep(classes[:, 1] - torch.logsumexp(others, dim=1), classes=classes)

    def loss(self, logits, labels, batch=None):
        return F.cross_entropy(self._outputs_for(logits)["classes"], labels.long())
