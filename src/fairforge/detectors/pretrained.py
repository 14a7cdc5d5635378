"""Pretrained starts: ImageNet (or the authors' own) weights loaded onto a detector's backbone.

``detectors.X.pretrained: PATH`` names a state dict file (read with ``weights_only=True``):
a timm or torchvision ImageNet model's ``state_dict()``, or the file the original code loads
(Cadene's ``xception-b5690688.pth``, whose pointwise weights are 2-d and are reshaped to
1×1 convolutions, as DeepfakeBench does; efficientnet_pytorch's EfficientNet files, whose
``_conv_stem``/``_blocks.N._depthwise_conv``/``_bn0`` names are translated to timm's with the
detector's own stage depths, so a B0 file fits a ``tf_efficientnet_b0`` backbone). Each architecture has a :class:`PretrainedLayout`
on :data:`PRETRAINED_LAYOUTS` saying which of its modules receive the weights and how the
file's names map onto them (e.g. Patch-Forensics' truncated trunk is an ``nn.Sequential``
of the backbone's first stages, so ``layer1.*`` becomes ``trunk.4.*``).

The rules, the same for every layout:

- the file's ImageNet classifier (``fc``, ``classifier``, ``last_linear``, ``head``) is
  dropped, and the detector's own head keeps its initialisation;
- every other parameter and buffer of a target module must be filled with the same shape
  (BatchNorm's ``num_batches_tracked`` may be absent); a first convolution with more input
  channels than the file's three (SPSL's phase channel, SRM's residual, F3Net's bands) gets
  the RGB filters repeated and scaled by 3/C, as timm's ``adapt_input_conv`` does;
- a file key that no target uses is an error, unless the target is ``partial`` (it holds
  only the first stages of the pretrained network).

Anything else stops with :class:`PretrainedMismatch`, listing the unmatched keys; a missing
file stops with ``FileNotFoundError`` naming the path. MesoNet has no layout: its authors
train it from scratch.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from fairforge.checkpoints import CheckpointMismatch, listing, read_state_dict
from fairforge.detectors.base import DETECTORS
from fairforge.detectors.efficientnet import timm_names
from fairforge.registry import Registry

log = logging.getLogger(__name__)

#: The ImageNet classifier of a pretrained file (dropped) and of a target module (ours, kept).
HEAD_PATTERN = re.compile(r"^(_?fc|classifier|last_linear|head|head\.fc)\.(weight|bias)$")


@dataclass(frozen=True)
class PretrainedTarget:
    """One module of a detector (dotted attribute path) filled from the file."""

    module: str
    #: (regex on the file's key, replacement) tried in order; a key no rule matches is kept
    rules: tuple[tuple[str, str], ...] = ()
    #: the module is the first stages of the pretrained network: unused file keys are fine
    partial: bool = False
    #: instead of ``rules``: ``names(file keys, module) -> {file key: module key}``, for
    #: mappings that depend on the module (efficientnet_pytorch's block numbers)
    names: Callable[[Iterable[str], nn.Module], dict[str, str]] | None = None
    #: regexes of the module's own keys that keep their initialisation (layers the detector
    #: adds to the pretrained network, e.g. UCF's 2048 -> 512 ``adjust_channel``)
    own: tuple[str, ...] = ()


@dataclass(frozen=True)
class PretrainedLayout:
    targets: tuple[PretrainedTarget, ...]
    #: the file each published model starts from (for the docs and configs/benchmark.yaml)
    source: str = ""


PRETRAINED_LAYOUTS: Registry = Registry("pretrained layout")

# The Sequential indices of the Xception stem and first blocks (fairforge.detectors.xception).
_XCEPTION_TRUNK = (
    (r"^conv1\.", "0."),
    (r"^bn1\.", "1."),
    (r"^conv2\.", "3."),
    (r"^bn2\.", "4."),
    (r"^block1\.", "6."),
    (r"^block2\.", "7."),
    (r"^block3\.", "8."),
)
_RESNET_TRUNK = ((r"^conv1\.", "0."), (r"^bn1\.", "1."), (r"^layer1\.", "4."))
_XCEPTION_FILE = "ImageNet Xception (timm legacy_xception, or Cadene's xception-b5690688.pth)"

for _arch in ("xception", "core", "ffd", "spsl"):
    PRETRAINED_LAYOUTS.register(
        _arch, PretrainedLayout((PretrainedTarget("backbone"),), _XCEPTION_FILE)
    )
PRETRAINED_LAYOUTS.register(  # DeepfakeBench's Recce builds its encoder as ImageNet Xception
    "recce", PretrainedLayout((PretrainedTarget("encoder"),), _XCEPTION_FILE)
)
PRETRAINED_LAYOUTS.register(
    "f3net",
    PretrainedLayout(
        (PretrainedTarget("fad_net"), PretrainedTarget("lfs_net")),
        _XCEPTION_FILE + ", into both streams",
    ),
)
PRETRAINED_LAYOUTS.register(  # as DeepfakeBench's UCF: each encoder a whole ImageNet Xception
    "ucf",
    PretrainedLayout(
        (
            PretrainedTarget("encoder_f", own=(r"^adjust_channel\.",)),
            PretrainedTarget("encoder_c", own=(r"^adjust_channel\.",)),
        ),
        _XCEPTION_FILE + ", into both encoders (their 2048 -> 512 reductions start random)",
    ),
)
PRETRAINED_LAYOUTS.register(
    "patch_xception",
    PretrainedLayout((PretrainedTarget("trunk", _XCEPTION_TRUNK, partial=True),), _XCEPTION_FILE),
)
PRETRAINED_LAYOUTS.register(
    "patch_resnet",
    PretrainedLayout(
        (PretrainedTarget("trunk", _RESNET_TRUNK, partial=True),),
        "ImageNet ResNet (timm/torchvision resnet18, or the configured backbone)",
    ),
)
_EFFICIENTNET_FILE = (
    "ImageNet EfficientNet-B4 with AdvProp: efficientnet_pytorch's adv-efficientnet-b4-44fb3a87.pth"
    " (what DeepfakeBench and the multi-attention authors start from) or timm's"
    " tf_efficientnet_b4.ap_in1k"
)
for _arch in (
    "efficientnet_b4",
    "efficientnet_b4_dfb",
    "sbi_dfb",
    "multi_attention",
    "multi_attention_dfb",
):
    PRETRAINED_LAYOUTS.register(
        _arch,
        PretrainedLayout((PretrainedTarget("backbone", names=timm_names),), _EFFICIENTNET_FILE),
    )
PRETRAINED_LAYOUTS.register(
    "capsule",
    PretrainedLayout(
        (PretrainedTarget("vgg", ((r"^features\.", ""),), partial=True),),
        "ImageNet VGG-19 (torchvision vgg19 or timm vgg19)",
    ),
)
PRETRAINED_LAYOUTS.register(
    "fwa", PretrainedLayout((PretrainedTarget("backbone"),), "ImageNet ResNet-50 (timm resnet50)")
)
PRETRAINED_LAYOUTS.register(
    "srm",
    PretrainedLayout(
        (PretrainedTarget("backbone_rgb"), PretrainedTarget("backbone_srm")),
        _XCEPTION_FILE + ", into both streams (DeepfakeBench's srm loads it into each)",
    ),
)
PRETRAINED_LAYOUTS.register(
    "face_xray",
    PretrainedLayout(
        (PretrainedTarget("backbone", partial=True),), "ImageNet HRNet-W48-C (timm hrnet_w48)"
    ),
)
PRETRAINED_LAYOUTS.register(
    "uia_vit",
    PretrainedLayout((PretrainedTarget("vit"),), "ImageNet ViT-B/16 (timm vit_base_patch16_224)"),
)
PRETRAINED_LAYOUTS.register(
    "conv_lstm",
    PretrainedLayout((PretrainedTarget("cnn"),), "ImageNet InceptionV3 (timm inception_v3)"),
)


class PretrainedMismatch(CheckpointMismatch):
    """A pretrained file that does not fit the detector; the message lists the keys."""


def _adapt(value: torch.Tensor, shape: torch.Size) -> torch.Tensor | None:
    """``value`` fitted to ``shape`` by the two adaptations the layouts allow, else None."""
    if value.shape == shape:
        return value
    if value.ndim == 2 and len(shape) == 4 and tuple(shape[2:]) == (1, 1):  # Cadene pointwise
        return value.reshape(shape) if value.numel() == math.prod(shape) else None
    if value.ndim == 4 and len(shape) == 4 and value.shape[1] == 3 and shape[1] != 3:
        if (value.shape[0], *value.shape[2:]) == (shape[0], *shape[2:]):
            repeats = math.ceil(shape[1] / 3)
            return value.repeat(1, repeats, 1, 1)[:, : shape[1]] * (3.0 / shape[1])
    return None


def _rename(key: str, rules) -> str:
    for pattern, repl in rules:
        if re.search(pattern, key):
            return re.sub(pattern, repl, key)
    return key


def map_pretrained_state(state: dict, model: nn.Module, layout: PretrainedLayout) -> dict:
    """``state`` mapped onto ``model``'s full key names (only its target modules); raises
    :class:`PretrainedMismatch` listing what does not fit."""
    body = {k: v for k, v in state.items() if not HEAD_PATTERN.match(k)}
    mapped, used, missing, wrong = {}, set(), [], []
    for target in layout.targets:
        module = model.get_submodule(target.module)
        wanted = {
            k: v
            for k, v in module.state_dict().items()
            if not HEAD_PATTERN.match(k) and not any(re.search(p, k) for p in target.own)
        }
        if target.names is not None:
            renamed = {v: k for k, v in target.names(body, module).items()}
        else:
            renamed = {_rename(k, target.rules): k for k in body}
        for key, ours in wanted.items():
            if key not in renamed:
                if not key.endswith("num_batches_tracked"):
                    missing.append(f"{target.module}.{key}")
                continue
            source = renamed[key]
            used.add(source)
            value = _adapt(body[source], ours.shape)
            if value is None:
                wrong.append(f"{source} {tuple(body[source].shape)}≠{tuple(ours.shape)}")
                continue
            mapped[f"{target.module}.{key}"] = value.to(ours.dtype)
    partial = any(t.partial for t in layout.targets)
    unused = [] if partial else [k for k in body if k not in used]
    problems = []
    if missing:
        problems.append(f"parameters the file does not provide ({listing(missing)})")
    if wrong:
        problems.append(f"shape mismatches ({listing(wrong)})")
    if unused:
        problems.append(f"file keys no parameter takes ({listing(unused)})")
    if problems:
        raise PretrainedMismatch("; ".join(problems))
    return mapped


def apply_pretrained(model: nn.Module, arch: str, path: str | Path) -> int:
    """Load the pretrained file ``path`` onto ``model`` (an ``arch`` detector) by its
    layout; returns the number of tensors loaded."""
    if arch not in PRETRAINED_LAYOUTS:
        raise KeyError(
            f"{arch!r} has no pretrained layout (its authors train it from scratch); "
            f"layouts exist for {PRETRAINED_LAYOUTS.names()}"
        )
    DETECTORS.get(arch)  # an unknown architecture is named as such
    state = read_state_dict(path, f"pretrained weights for {arch}")
    try:
        mapped = map_pretrained_state(state, model, PRETRAINED_LAYOUTS.get(arch))
    except PretrainedMismatch as err:
        raise PretrainedMismatch(f"pretrained weights {path} do not fit {arch}: {err}") from None
    model.load_state_dict(mapped, strict=False)
    log.info("%s: %d pretrained tensors loaded from %s", arch, len(mapped), path)
    return len(mapped)
