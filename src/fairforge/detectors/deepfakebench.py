"""Load DeepfakeBench checkpoints onto fairforge detectors.

DeepfakeBench (Yan et al., NeurIPS 2023 Datasets & Benchmarks) saves ``model.state_dict()`` of
its detector classes: the network under ``backbone.`` (Xception with the FaceForensics++
parameter names, identical to timm's ``legacy_xception``), detector-level modules beside it
(FFD's ``map``, Capsule-Forensics' ``vgg_ext``/``fea_ext``/``routing_stats``) and a two-class
head (``last_linear``: real, fake). fairforge detectors have one logit, so the head becomes
``w_fake − w_real`` and ``b_fake − b_real``: sigmoid of that logit equals DeepfakeBench's
softmax probability of "fake". A head of another width is kept as it is (``sbi``'s three
classes: ``sbi_dfb`` computes the logit from them).

Layouts are named by DeepfakeBench's ``model_name`` and declared, as data, on the registration
of the fairforge detector that computes the same function (``@DETECTORS.register(...,
deepfakebench={"meso4": DeepfakeBenchLayout(...)})`` on ``meso4_dfb``); this module keeps the
mechanism (:func:`deepfakebench_layouts`, :func:`deepfakebench_target`):

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

import re
from pathlib import Path

import torch

from fairforge.checkpoints import CheckpointMismatch, listing, unwrap_state
from fairforge.detectors.base import DETECTORS, DeepfakeBenchLayout, Detector, create_detector


def deepfakebench_layouts() -> dict[str, tuple[str, DeepfakeBenchLayout]]:
    """DeepfakeBench ``model_name`` → (the fairforge detector it loads onto, its layout):
    every ``deepfakebench`` layout the detectors declare on their registrations."""
    out = {}
    for arch in DETECTORS.names():
        for model, layout in DETECTORS.metadata(arch).get("deepfakebench", {}).items():
            if model in out:
                raise ValueError(
                    f"DeepfakeBench model {model!r} is declared by {out[model][0]} and {arch}"
                )
            out[model] = (arch, layout)
    return dict(sorted(out.items()))


def _layout_name(arch: str) -> str:
    """The layout for ``arch``: a DeepfakeBench ``model_name``, or else the fairforge detector
    a layout builds (``meso4_dfb`` → ``meso4``), so a config's ``arch`` works too."""
    layouts = deepfakebench_layouts()
    if arch in layouts:
        return arch
    for name, (target, _) in layouts.items():
        if target == arch:
            return name
    raise KeyError(f"no DeepfakeBench layout for {arch!r}; supported: {sorted(layouts)}")


def deepfakebench_target(model: str) -> str:
    """The fairforge detector that DeepfakeBench's ``model`` (or a detector name) loads onto."""
    return deepfakebench_layouts()[_layout_name(model)][0]


def map_deepfakebench_state(state: dict, arch: str, target: dict) -> dict:
    """Rename a DeepfakeBench state dict to ``arch``'s names and check it against ``target``
    (our model's state dict); raises :class:`CheckpointMismatch` listing what does not fit."""
    target_name, layout = deepfakebench_layouts()[_layout_name(arch)]
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
