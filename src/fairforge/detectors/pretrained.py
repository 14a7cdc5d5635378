"""Pretrained starts: ImageNet (or the authors' own) weights loaded onto a detector's backbone.

``detectors.X.pretrained: PATH`` names a state dict file (read with ``weights_only=True``):
a timm or torchvision ImageNet model's ``state_dict()``, or the file the original code loads
(Cadene's ``xception-b5690688.pth``, whose pointwise weights are 2-d and are reshaped to
1×1 convolutions, as DeepfakeBench does; efficientnet_pytorch's EfficientNet files, whose
``_conv_stem``/``_blocks.N._depthwise_conv``/``_bn0`` names are translated to timm's with the
detector's own stage depths, so a B0 file fits a ``tf_efficientnet_b0`` backbone). Each architecture has a :class:`PretrainedLayout`
on its registration (``@DETECTORS.register(..., pretrained=PretrainedLayout(...))``) saying which of its
modules receive the weights and how the
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
train it from scratch. ``pretrained: timm:<model name>`` takes timm's ImageNet weights
through timm's own download and cache (an offline machine is told the cache path).

Honest starts: a detector whose paper starts from ImageNet weights (its published recipe's
``init``) does not silently train from random ones. Without ``pretrained`` it stops
(:func:`require_start`: the config check for the detectors whose recipe is their own, the
training job for every detector) naming the file it expects and the two ways out, the
weights or ``init: random``, which the protocol card, ``detectors.csv`` and the report then
flag as :data:`NOT_PAPER_INIT`. A frozen part is never frozen at random weights
(:func:`check_frozen_start`).
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from fairforge.checkpoints import TIMM_PREFIX, CheckpointMismatch, listing, read_state_dict
from fairforge.detectors.base import DETECTORS, PretrainedLayout, paper_init
from fairforge.recipes import NOT_PAPER_INIT, UNSTATED
from fairforge.registry import UnknownName

log = logging.getLogger(__name__)

#: The ImageNet classifier of a pretrained file (dropped) and of a target module (ours, kept).
HEAD_PATTERN = re.compile(r"^(_?fc|classifier|last_linear|head|head\.fc)\.(weight|bias)$")


def pretrained_archs() -> list[str]:
    """The detectors that declare a pretrained layout."""
    return [a for a in DETECTORS.names() if DETECTORS.metadata(a).get("pretrained")]


def pretrained_layout(arch: str) -> PretrainedLayout:
    """``arch``'s pretrained layout (its registration's); :class:`UnknownName` for an
    architecture without one, listing those with one."""
    layout = DETECTORS.metadata(arch).get("pretrained")
    if layout is None:
        raise UnknownName("pretrained layout", arch, pretrained_archs())
    return layout


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


def timm_cache(name: str) -> str:
    """Where timm keeps the weights of ``name`` once downloaded: the Hugging Face hub cache
    (``$HF_HUB_CACHE``) for weights on the hub, else torch's hub cache (``$TORCH_HOME``)."""
    from timm.models import get_pretrained_cfg

    cfg = get_pretrained_cfg(name)
    if cfg is None:
        raise KeyError(f"timm has no pretrained weights named {name!r}")
    if cfg.hf_hub_id:
        from huggingface_hub.constants import HF_HUB_CACHE

        return str(Path(HF_HUB_CACHE) / ("models--" + cfg.hf_hub_id.replace("/", "--")))
    return str(Path(torch.hub.get_dir()) / "checkpoints" / Path(str(cfg.url)).name)


def timm_state_dict(name: str) -> dict:
    """The ImageNet state dict of timm's ``name`` (a model, optionally with its weights' tag:
    ``resnet50.tv_in1k``), through timm's own download and cache (``weights_only`` or
    safetensors); a machine that cannot download them is told where the cache is."""
    import timm

    if not timm.is_model(name):
        raise KeyError(f"pretrained: {TIMM_PREFIX}{name}: timm has no model {name!r}")
    try:
        return timm.create_model(name, pretrained=True).state_dict()
    except (OSError, RuntimeError, ValueError) as err:  # offline: connection or cache miss
        raise FileNotFoundError(
            f"pretrained: {TIMM_PREFIX}{name}: timm could not download its weights and they "
            f"are not in its cache ({timm_cache(name)}): {type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}. On a machine with network access "
            f"run python -c \"import timm; timm.create_model('{name}', pretrained=True)\" and "
            "copy that cache folder here, or give pretrained: PATH (a state dict file)"
        ) from None


def pretrained_state(arch: str, source: str | Path) -> dict:
    """The state dict that ``source`` names: a file (``weights_only=True``), or
    ``timm:<model name>``, timm's ImageNet weights."""
    text = str(source)
    if text.startswith(TIMM_PREFIX):
        return timm_state_dict(text[len(TIMM_PREFIX) :])
    return read_state_dict(source, f"pretrained weights for {arch}")


def apply_pretrained(model: nn.Module, arch: str, path: str | Path) -> int:
    """Load the pretrained weights ``path`` (a file, or ``timm:<model name>``) onto
    ``model`` (an ``arch`` detector) by its layout; returns the number of tensors loaded."""
    layout = pretrained_layout(arch)
    state = pretrained_state(arch, path)
    try:
        mapped = map_pretrained_state(state, model, layout)
    except PretrainedMismatch as err:
        raise PretrainedMismatch(f"pretrained weights {path} do not fit {arch}: {err}") from None
    model.load_state_dict(mapped, strict=False)
    log.info("%s: %d pretrained tensors loaded from %s", arch, len(mapped), path)
    return len(mapped)


# ----------------------------------------------------------------------- honest starts

#: A start the config leaves to the paper, which starts from ImageNet weights none give.
MISSING = "imagenet:missing"


class StartError(ValueError):
    """A detector that cannot start as configured: its paper's ImageNet weights are not
    given, or a part it freezes would stay random."""


@dataclass(frozen=True)
class Start:
    """How a detector starts: ``init`` is ``random``, ``imagenet:<source>`` or
    ``checkpoint:<path>``; ``source`` where that comes from (``config``, or the paper);
    ``note`` :data:`NOT_PAPER_INIT` when the config departs from the paper's ImageNet start."""

    init: str
    source: str
    note: str = ""

    @property
    def missing(self) -> bool:
        return self.init == MISSING


def resolve_start(
    arch: str,
    init: str | None = None,
    pretrained: str | None = None,
    checkpoint: str | None = None,
) -> Start:
    """How ``arch`` starts under a detector block's ``init``, ``pretrained`` and
    ``checkpoint``: a checkpoint (imported, or fine-tuned with ``init: checkpoint``), the
    ``pretrained`` weights, ``init: random``, or else what its paper does
    (:func:`~fairforge.detectors.base.paper_init`): random weights, or ImageNet weights that
    no key gives (:data:`MISSING`: training stops, :func:`require_start`)."""
    paper, where = paper_init(arch)
    if checkpoint and (init == "checkpoint" or init is None):
        return Start(f"checkpoint:{checkpoint}", "config")
    if pretrained:
        return Start(f"imagenet:{pretrained}", f"config, as {where}" if where else "config")
    if init == "random":
        return Start("random", "config", NOT_PAPER_INIT if paper == "imagenet" else "")
    if paper == "imagenet":
        return Start(MISSING, where)
    return Start("random", where or UNSTATED)


def require_start(
    name: str,
    arch: str,
    init: str | None = None,
    pretrained: str | None = None,
    checkpoint: str | None = None,
) -> Start:
    """:func:`resolve_start`, or :class:`StartError` for a detector (``detectors.<name>``)
    whose paper starts from ImageNet weights that the config does not give: the message
    names the detector, the file its layout expects and the two ways out."""
    start = resolve_start(arch, init, pretrained, checkpoint)
    if start.missing:
        layout = pretrained_layout(arch)
        timm_hint = f" or pretrained: {TIMM_PREFIX}{layout.timm}" if layout.timm else ""
        raise StartError(
            f"detectors.{name} ({arch}): its paper starts from ImageNet weights "
            f"({start.source}) and none are configured; expected {layout.source}. Set "
            f"detectors.{name}.pretrained: PATH (that state dict file){timm_hint} (timm's "
            f"download, cached under $HF_HUB_CACHE or $TORCH_HOME), or train from random "
            f"weights with detectors.{name}.init: random (flagged as {NOT_PAPER_INIT!r})"
        )
    return start


def check_frozen_start(name: str, model: nn.Module, start: Start) -> None:
    """A part the detector freezes (Capsule's VGG) is never frozen at random weights."""
    frozen = sorted({n.split(".")[0] for n, p in model.named_parameters() if not p.requires_grad})
    if frozen and start.init == "random":
        raise StartError(
            f"detectors.{name}: {', '.join(frozen)} is frozen, and would stay at random weights "
            f"(init: random); give its ImageNet weights with pretrained:, or unfreeze it in "
            "the model's options"
        )
