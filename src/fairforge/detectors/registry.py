"""The detector registry and the small base class every detector shares."""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn
import torch.nn.functional as F

_REGISTRY: dict[str, type["Detector"]] = {}

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class Detector(nn.Module):
    """Base class: one logit per image, binary cross-entropy by default.

    Class attributes describe the expected input so that data loading needs no model-specific
    code: ``default_input_size`` (pixels, square), ``mean`` and ``std`` (per channel, on [0, 1]).
    """

    name: str = ""
    default_input_size: int = 256
    mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    std: tuple[float, float, float] = (0.5, 0.5, 0.5)
    #: True when :meth:`loss` wants the manipulation masks in the batch.
    needs_masks: bool = False

    def loss(self, logits: torch.Tensor, labels: torch.Tensor,
             batch: dict | None = None) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(logits, labels.float())


def register(name: str) -> Callable[[type[Detector]], type[Detector]]:
    def wrap(cls: type[Detector]) -> type[Detector]:
        if name in _REGISTRY:
            raise ValueError(f"detector {name!r} registered twice")
        cls.name = name
        _REGISTRY[name] = cls
        return cls
    return wrap


def list_detectors() -> list[str]:
    return sorted(_REGISTRY)


def detector_entry(name: str) -> type[Detector]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown detector {name!r}; registered: {list_detectors()}") from None


def create_detector(name: str, **config) -> Detector:
    """Build a registered detector; ``config`` holds its constructor arguments."""
    return detector_entry(name)(**config)
