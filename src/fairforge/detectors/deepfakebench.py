"""Load DeepfakeBench checkpoints onto fairforge detectors.

DeepfakeBench (Yan et al., NeurIPS 2023 Datasets & Benchmarks) saves ``model.state_dict()`` of
its detector classes: the network under ``backbone.`` (Xception with the FaceForensics++
parameter names, identical to timm's ``legacy_xception``), detector-level modules beside it
(FFD's ``map``, Capsule-Forensics' ``vgg_ext``/``fea_ext``/``routing_stats``) and a two-class
head (``last_linear``: real, fake). fairforge detectors have one logit, so the head becomes
``w_fake − w_real`` and ``b_fake − b_real``: sigmoid of that logit equals DeepfakeBench's
softmax probability of "fake".

Supported: ``xception``, ``core`` and ``spsl`` (Xception backbones, SPSL with 4 input
channels and the full network, as DeepfakeBench runs it), ``ffd`` (the regression map) and
``capsule``. Keys that DeepfakeBench builds but never uses (``adjust_channel``) are dropped;
any other key left over, any parameter of ours left unfilled, or a shape mismatch is an error
that lists them.

    >>> model = load_deepfakebench("xception_best.pth", "xception", input_size=256)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import torch

from fairforge.detectors import recce, ucf
from fairforge.detectors.base import Detector, create_detector


@dataclass(frozen=True)
class _Layout:
    rules: tuple[tuple[str, str], ...]  # (regex on DeepfakeBench key, replacement)
    ignore: tuple[str, ...] = ()  # DeepfakeBench keys with no counterpart
    head: str | None = None  # our single-logit linear layer, if any


_XCEPTION_RULES = (
    (r"^backbone\.last_linear\.(?:1\.)?(weight|bias)$", r"backbone.fc.\1"),
    (r"^backbone\.(.+)$", r"backbone.\1"),
)
_XCEPTION_IGNORE = (r"^backbone\.adjust_channel\.",)

LAYOUTS: dict[str, _Layout] = {
    "xception": _Layout(_XCEPTION_RULES, _XCEPTION_IGNORE, head="backbone.fc"),
    "core": _Layout(_XCEPTION_RULES, _XCEPTION_IGNORE, head="backbone.fc"),
    "spsl": _Layout(_XCEPTION_RULES, _XCEPTION_IGNORE, head="backbone.fc"),
    "ffd": _Layout(
        (
            (r"^map\.c\.conv1\.weight$", "attention.0.weight"),
            (r"^map\.c\.pointwise\.weight$", "attention.1.weight"),
            *_XCEPTION_RULES,
        ),
        _XCEPTION_IGNORE,
        head="backbone.fc",
    ),
    "capsule": _Layout(
        (
            (r"^vgg_ext\.vgg_1\.(.+)$", r"vgg.\1"),
            (r"^fea_ext\.capsules\.(.+)$", r"capsules.\1"),
            (r"^routing_stats\.route_weights$", "routing.route_weights"),
        )
    ),
}

LAYOUTS["ucf"] = _Layout(ucf.DEEPFAKEBENCH_RULES)  # two-class head kept (fake − real in forward)
LAYOUTS["recce"] = _Layout(
    recce.DEEPFAKEBENCH_RULES, recce.DEEPFAKEBENCH_IGNORE, head=recce.DEEPFAKEBENCH_HEAD
)


class CheckpointMismatch(ValueError):
    pass


def _listing(keys, limit: int = 12) -> str:
    keys = sorted(keys)
    shown = ", ".join(keys[:limit])
    return f"{len(keys)}: {shown}" + (", ..." if len(keys) > limit else "")


def _unwrap(state: dict) -> dict:
    """The tensor dict inside common checkpoint containers, without ``module.`` prefixes."""
    for key in ("state_dict", "model", "net"):
        if key in state and isinstance(state[key], dict) and not torch.is_tensor(state[key]):
            state = state[key]
            break
    if state and all(k.startswith("module.") for k in state):
        state = {k[len("module.") :]: v for k, v in state.items()}
    return state


def map_deepfakebench_state(state: dict, arch: str, target: dict) -> dict:
    """Rename a DeepfakeBench state dict to ``arch``'s names and check it against ``target``
    (our model's state dict); raises :class:`CheckpointMismatch` listing what does not fit."""
    if arch not in LAYOUTS:
        raise KeyError(f"no DeepfakeBench layout for {arch!r}; supported: {sorted(LAYOUTS)}")
    layout = LAYOUTS[arch]
    mapped, unmatched = {}, []
    for key, value in _unwrap(state).items():
        if any(re.search(p, key) for p in layout.ignore):
            continue
        for pattern, repl in layout.rules:
            if re.search(pattern, key):
                mapped[re.sub(pattern, repl, key)] = value
                break
        else:
            unmatched.append(key)
    if layout.head is not None:
        for part in ("weight", "bias"):
            key = f"{layout.head}.{part}"
            if key in mapped and mapped[key].shape[0] == 2:
                mapped[key] = mapped[key][1:2] - mapped[key][0:1]  # fake − real
    unknown = [k for k in mapped if k not in target]
    missing = [k for k in target if k not in mapped]
    wrong = [
        f"{k} {tuple(mapped[k].shape)}≠{tuple(target[k].shape)}"
        for k in mapped
        if k in target and mapped[k].shape != target[k].shape
    ]
    problems = []
    if unmatched:
        problems.append(f"checkpoint keys with no rule ({_listing(unmatched)})")
    if unknown:
        problems.append(f"checkpoint keys mapped to names {arch} lacks ({_listing(unknown)})")
    if missing:
        problems.append(f"{arch} parameters the checkpoint does not provide ({_listing(missing)})")
    if wrong:
        problems.append(f"shape mismatches ({_listing(wrong)})")
    if problems:
        raise CheckpointMismatch(
            f"DeepfakeBench checkpoint does not fit {arch}: " + "; ".join(problems)
        )
    return mapped


def load_deepfakebench(path_or_state_dict: str | Path | dict, arch: str, **cfg) -> Detector:
    """Build ``arch`` with ``cfg`` and load a DeepfakeBench checkpoint (a path, read with
    ``weights_only=True``, or an already loaded state dict) onto it; returns it in eval mode."""
    if isinstance(path_or_state_dict, dict):
        state = path_or_state_dict
    else:
        path = Path(path_or_state_dict)
        if not path.is_file():
            raise FileNotFoundError(f"DeepfakeBench checkpoint not found: {path}")
        state = torch.load(path, map_location="cpu", weights_only=True)
    if arch not in LAYOUTS:
        raise KeyError(f"no DeepfakeBench layout for {arch!r}; supported: {sorted(LAYOUTS)}")
    model = create_detector(arch, **cfg)
    mapped = map_deepfakebench_state(state, arch, model.state_dict())
    model.load_state_dict(mapped)
    return model.eval()
