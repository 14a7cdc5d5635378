"""Load DeepfakeBench checkpoints onto fairforge detectors.

DeepfakeBench (Yan et al., NeurIPS 2023 Datasets & Benchmarks) saves ``model.state_dict()`` of
its detector classes: the network under ``backbone.`` (Xception with the FaceForensics++
parameter names, identical to timm's ``legacy_xception``), detector-level modules beside it
(FFD's ``map``, Capsule-Forensics' ``vgg_ext``/``fea_ext``/``routing_stats``) and a two-class
head (``last_linear``: real, fake). fairforge detectors have one logit, so the head becomes
``w_fake − w_real`` and ``b_fake − b_real``: sigmoid of that logit equals DeepfakeBench's
softmax probability of "fake". A head of another width is kept as it is (``sbi``'s three
classes: ``sbi_dfb`` computes the logit from them).

Layouts are named by DeepfakeBench's ``model_name``; each builds the fairforge detector that
computes the same function (:data:`LAYOUTS`, :func:`deepfakebench_target`):

=================  ======================  ============================================
DeepfakeBench      fairforge detector      notes
=================  ======================  ============================================
xception           xception
core, spsl         core, spsl              SPSL with 4 input channels, as DFB runs it
fwa                xception                DFB's FWA is an Xception
ffd                ffd                     the regression map
meso4              meso4_dfb               DFB's shared BatchNorms, ReLU before BN
meso4Inception     meso4inception_dfb
efficientnetb4     efficientnet_b4_dfb     efficientnet_pytorch names → timm names
sbi                sbi_dfb                 as efficientnetb4, three-class head kept,
                                           ImageNet normalisation
capsule_net        capsule                 (``capsule`` is accepted too); the paper's
                                           mean vote unless ``output: deepfakebench``
f3net              f3net_dfb               FAD only, one Xception
srm                srm                     two streams, DFB's module names
facexray           face_xray_dfb           HRNet-W48 (timm's names are the official ones
                                           but the ImageNet classifier, ``fc`` there)
multi_attention    multi_attention_dfb     on efficientnetb4's network; its warm-up head
                                           is ``warmup_head``
uia_vit            uia_vit                 timm's ViT names; the patch Gaussians, not
                                           saved by DeepfakeBench, start unseen
=================  ======================  ============================================

A fairforge detector name from the middle column selects its layout too (a config's
``arch``). Keys that DeepfakeBench builds but never uses (``adjust_channel``, SRM's second
classifier and blur kernel, F3Net's transposed DCT copy, HRNet's ImageNet head:
``incre_modules``, ``downsamp_modules``, ``final_layer``, ``fc``) are dropped; any other key
left over, any parameter of ours left unfilled, or a shape mismatch is an error that lists
them. The model is built on the meta device and takes the checkpoint's tensors, so
nothing is initialised only to be overwritten.

    >>> model = load_deepfakebench("xception_best.pth", "xception", input_size=256)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from fairforge.checkpoints import CheckpointMismatch, listing, unwrap_state
from fairforge.detectors import recce, ucf
from fairforge.detectors.base import Detector, create_detector
from fairforge.detectors.efficientnet import B4_REPEATS, efficientnet_pytorch_to_timm


@dataclass(frozen=True)
class _Layout:
    rules: tuple[tuple[str, object], ...]  # (regex on DeepfakeBench key, replacement)
    ignore: tuple[str, ...] = ()  # DeepfakeBench keys with no counterpart
    # our single-logit linear layer(s) from DeepfakeBench's two-class ones, if any
    head: str | tuple[str, ...] | None = None
    target: str | None = None  # the fairforge detector built, when its name differs
    # our buffers DeepfakeBench does not save (regex, their initial value from the shape)
    fill: tuple[tuple[str, Callable[[torch.Size], torch.Tensor]], ...] = ()


_XCEPTION_RULES = (
    (r"^backbone\.last_linear\.(?:1\.)?(weight|bias)$", r"backbone.fc.\1"),
    (r"^backbone\.(.+)$", r"backbone.\1"),
)
_XCEPTION_IGNORE = (r"^backbone\.adjust_channel\.",)


def _effnet(match: re.Match) -> str:
    name = efficientnet_pytorch_to_timm(match.group(1), B4_REPEATS)
    return f"backbone.{name}" if name else f"<no counterpart: {match.group(0)}>"


# DeepfakeBench's EfficientNet-B4 (efficientnet_pytorch) under ``backbone.efficientnet``
_EFFNET_RULES = ((r"^backbone\.efficientnet\.(.+)$", _effnet),)
# its ``efficientnetb4`` backbone with the head ``last_layer`` (``sbi``'s too)
_EFFNETB4 = _Layout(
    (
        (r"^backbone\.last_layer\.(?:1\.)?(weight|bias)$", r"backbone.classifier.\1"),
        *_EFFNET_RULES,
    ),
    (r"^backbone\.adjust_channel\.",),
    head="backbone.classifier",
)


def _facexray_head(match: re.Match) -> str:
    module, index, rest = match.group(1), int(match.group(2)), match.group(3)
    if module == "fc" and index == 6:
        index = 7  # our dropout sits before the last layer
    return f"{module}.{index}.{rest}"


_MESO = _Layout(((r"^backbone\.(.+)$", r"\1"),), head="fc2")
_CAPSULE = _Layout(
    (
        (r"^vgg_ext\.vgg_1\.(.+)$", r"vgg.\1"),
        (r"^fea_ext\.capsules\.(.+)$", r"capsules.\1"),
        (r"^routing_stats\.route_weights$", "routing.route_weights"),
    ),
    target="capsule",
)

LAYOUTS: dict[str, _Layout] = {
    "xception": _Layout(_XCEPTION_RULES, _XCEPTION_IGNORE, head="backbone.fc"),
    "core": _Layout(_XCEPTION_RULES, _XCEPTION_IGNORE, head="backbone.fc"),
    "spsl": _Layout(_XCEPTION_RULES, _XCEPTION_IGNORE, head="backbone.fc"),
    # DeepfakeBench's FWA is an Xception trained on face-warping fakes (fairforge's ``fwa`` is
    # the Benchmark paper's ResNet-50): its checkpoint loads onto ``xception``
    "fwa": _Layout(_XCEPTION_RULES, _XCEPTION_IGNORE, head="backbone.fc", target="xception"),
    "ffd": _Layout(
        (
            (r"^map\.c\.conv1\.weight$", "attention.0.weight"),
            (r"^map\.c\.pointwise\.weight$", "attention.1.weight"),
            *_XCEPTION_RULES,
        ),
        _XCEPTION_IGNORE,
        head="backbone.fc",
    ),
    "capsule": _CAPSULE,
    "capsule_net": _CAPSULE,
    "meso4": dataclasses.replace(_MESO, target="meso4_dfb"),
    "meso4Inception": dataclasses.replace(_MESO, target="meso4inception_dfb"),
    "efficientnetb4": dataclasses.replace(_EFFNETB4, target="efficientnet_b4_dfb"),
    "sbi": dataclasses.replace(_EFFNETB4, target="sbi_dfb"),
    "f3net": _Layout(
        (
            (r"^FAD_head\._DCT_all$", "fad.dct"),
            (r"^FAD_head\.filters\.(\d+)\.(base|learnable)$", r"fad.filters.\1.\2"),
            *_XCEPTION_RULES,
        ),
        (*_XCEPTION_IGNORE, r"^FAD_head\._DCT_all_T$"),
        head="backbone.fc",
        target="f3net_dfb",
    ),
    "srm": _Layout(
        (
            (r"^backbone_rgb\.last_linear\.(?:1\.)?(weight|bias)$", r"backbone_rgb.fc.\1"),
            (
                r"^(backbone_(?:rgb|srm)|srm_conv\d|srm_sa|srm_sa_post|dual_cma\d|fusion)\.(.+)$",
                r"\1.\2",
            ),
        ),
        (
            r"^backbone_(?:rgb|srm)\.adjust_channel\.",
            r"^backbone_srm\.last_linear\.",  # built, never used
            r"^blur\.weight$",  # Gaussian smoothing built, never called
        ),
        head="backbone_rgb.fc",
    ),
    "facexray": _Layout(
        (
            (r"^(backbone)\.(.+)$", r"\1.\2"),
            (r"^(post_process|fc)\.(\d+)\.(.+)$", _facexray_head),
        ),
        # HRNet's ImageNet head: built (``fc``: 2048 → 1000) and saved, never used
        (r"^backbone\.(incre_modules|downsamp_modules|final_layer|fc)\.",),
        head="fc.7",
        target="face_xray_dfb",
    ),
}

LAYOUTS["multi_attention"] = _Layout(
    (
        *_EFFNET_RULES,
        (
            r"^(attention_generation|texture_enhance|projection_local|projection_final"
            r"|ensemble_classifier_fc)\.(.+)$",
            r"\1.\2",
        ),
        # the EfficientNet's own head, trained only in the warm-up epochs
        (r"^backbone\.last_layer\.(weight|bias)$", r"warmup_head.\1"),
    ),
    head=("ensemble_classifier_fc.2", "warmup_head"),
    target="multi_attention_dfb",
)
LAYOUTS["uia_vit"] = _Layout(
    (
        (r"^model\.(head|norm_middle)\.(weight|bias)$", r"\1.\2"),
        (r"^model\.(c_real|c_fake|c_cross)$", r"\1"),
        (r"^model\.(.+)$", r"vit.\1"),
    ),
    head="head",
    # DeepfakeBench keeps its patch Gaussians outside the state dict: they start unseen
    fill=(
        (r"^(real|fake)_mean$", torch.zeros),
        (r"^(real|fake)_cov$", lambda shape: torch.eye(shape[0])),
        (r"^(real|fake)_seen$", lambda shape: torch.zeros(shape, dtype=torch.bool)),
    ),
)
LAYOUTS["ucf"] = _Layout(ucf.DEEPFAKEBENCH_RULES)  # two-class head kept (fake − real in forward)
LAYOUTS["recce"] = _Layout(
    recce.DEEPFAKEBENCH_RULES, recce.DEEPFAKEBENCH_IGNORE, head=recce.DEEPFAKEBENCH_HEAD
)


def _layout_name(arch: str) -> str:
    """The layout for ``arch``: a DeepfakeBench ``model_name``, or else the fairforge detector
    a layout builds (``meso4_dfb`` → ``meso4``), so a config's ``arch`` works too."""
    if arch in LAYOUTS:
        return arch
    for name, layout in LAYOUTS.items():
        if layout.target == arch:
            return name
    raise KeyError(f"no DeepfakeBench layout for {arch!r}; supported: {sorted(LAYOUTS)}")


def deepfakebench_target(model: str) -> str:
    """The fairforge detector that DeepfakeBench's ``model`` (or a detector name) loads onto."""
    name = _layout_name(model)
    return LAYOUTS[name].target or name


def map_deepfakebench_state(state: dict, arch: str, target: dict) -> dict:
    """Rename a DeepfakeBench state dict to ``arch``'s names and check it against ``target``
    (our model's state dict); raises :class:`CheckpointMismatch` listing what does not fit."""
    target_name = deepfakebench_target(arch)
    layout = LAYOUTS[_layout_name(arch)]
    mapped, unmatched = {}, []
    for key, value in unwrap_state(state).items():
        if any(re.search(p, key) for p in layout.ignore):
            continue
        for pattern, repl in layout.rules:
            if re.search(pattern, key):
                new = re.sub(pattern, repl, key)
                if new in mapped:
                    raise CheckpointMismatch(f"two checkpoint keys map to {new}")
                mapped[new] = value
                break
        else:
            unmatched.append(key)
    heads = (layout.head,) if isinstance(layout.head, str) else layout.head or ()
    for head in heads:
        for part in ("weight", "bias"):
            key = f"{head}.{part}"
            if key in mapped and mapped[key].shape[0] == 2:
                mapped[key] = mapped[key][1:2] - mapped[key][0:1]  # fake − real
    for key, ours in target.items():
        for pattern, initial in layout.fill:
            if key not in mapped and re.search(pattern, key):
                mapped[key] = initial(ours.shape)
    unknown = [k for k in mapped if k not in target]
    missing = [k for k in target if k not in mapped]
    wrong = [
        f"{k} {tuple(mapped[k].shape)}≠{tuple(target[k].shape)}"
        for k in mapped
        if k in target and mapped[k].shape != target[k].shape
    ]
    problems = []
    if unmatched:
        problems.append(f"checkpoint keys with no rule ({listing(unmatched)})")
    if unknown:
        problems.append(f"checkpoint keys mapped to names {target_name} lacks ({listing(unknown)})")
    if missing:
        problems.append(
            f"{target_name} parameters the checkpoint does not provide ({listing(missing)})"
        )
    if wrong:
        problems.append(f"shape mismatches ({listing(wrong)})")
    if problems:
        raise CheckpointMismatch(
            f"DeepfakeBench {arch} checkpoint does not fit {target_name}: " + "; ".join(problems)
        )
    return mapped


def load_deepfakebench(path_or_state_dict: str | Path | dict, arch: str, **cfg) -> Detector:
    """Build the detector for DeepfakeBench's ``arch`` (its ``model_name``) with ``cfg`` and
    load a DeepfakeBench checkpoint (a path, read with ``weights_only=True``, or an already
    loaded state dict) onto it; returns it in eval mode."""
    if isinstance(path_or_state_dict, dict):
        state = path_or_state_dict
    else:
        path = Path(path_or_state_dict)
        if not path.is_file():
            raise FileNotFoundError(f"DeepfakeBench checkpoint not found: {path}")
        state = torch.load(path, map_location="cpu", weights_only=True)
    with torch.device("meta"):  # no random initialisation of what the checkpoint replaces
        model = create_detector(deepfakebench_target(arch), **cfg)
    mapped = map_deepfakebench_state(state, arch, model.state_dict())
    model.load_state_dict(
        {k: v.to(torch.float32) if v.is_floating_point() else v for k, v in mapped.items()},
        assign=True,
    )
    left = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if left:
        raise CheckpointMismatch(f"{arch}: tensors the checkpoint does not set ({listing(left)})")
    return model.eval()
