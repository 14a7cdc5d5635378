"""The detector family: one registry for every kind of detector, and the network base class.

Every detector is registered on :data:`DETECTORS` with its ``kind`` as metadata:

``network``
    an ``nn.Module`` subclass of :class:`Detector`, trained by the shared torch protocol;
``classical``
    a landmark model with ``fit(landmarks, labels)``, ``predict_proba(landmarks)``, ``save``
    and ``load`` (:mod:`fairforge.detectors.headpose`);
``external``
    scores computed elsewhere and read from a file (:mod:`fairforge.detectors.external`).

How each kind is trained, scored and costed is written once per kind, in
:mod:`fairforge.detector_kinds`, so adding a detector of an existing kind is one registration.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.registry import Registry

DETECTORS: Registry = Registry("detector")

KINDS = ("network", "classical", "external")

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class Detector(nn.Module):
    """Base class of the network detectors: one logit per image, binary cross-entropy by
    default.

    Class attributes describe the expected input so that data loading needs no model-specific
    code: ``default_input_size`` (pixels, square), ``mean`` and ``std`` (per channel, on [0, 1]).
    """

    name: str = ""
    default_input_size: int = 256
    mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    std: tuple[float, float, float] = (0.5, 0.5, 0.5)
    #: True when :meth:`loss` wants the manipulation masks in the batch.
    needs_masks: bool = False
    #: Inference precision on a GPU unless the config says otherwise: ``bf16`` autocast, or
    #: ``fp32`` for inputs that bf16 distorts (frequency or residual features: bf16 moves
    #: F3Net's LFS features by 28-31% rms and the SRM residual by 7%). bf16 is kept only if
    #: it changes the validation AUC by less than
    #: ``fairforge.training.detector.BF16_AUC_TOLERANCE``.
    precision: str = "bf16"

    #: Weights of the named terms of :meth:`losses` (a term not named here weighs 1).
    loss_weights: dict[str, float] = {}
    #: True when :meth:`losses` wants ``batch["method_label"]``: 0 for real samples, ``i`` for
    #: the i-th training method (1-based, in the order of ``train_methods``).
    needs_method_labels: bool = False

    def on_epoch_start(self, epoch: int, epochs: int) -> None:
        """Called by the training loop before each training epoch (``epoch`` from 1 to
        ``epochs``); detectors whose training changes with the epoch (warm-up phases,
        schedules inside the model) override it. Nothing by default."""

    def loss(
        self, logits: torch.Tensor, labels: torch.Tensor, batch: dict | None = None
    ) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(logits, labels.float())

    def losses(
        self, logits: torch.Tensor, labels: torch.Tensor, batch: dict | None = None
    ) -> dict[str, torch.Tensor]:
        """The named loss terms of one step; the training loop sums them with
        :attr:`loss_weights` (:func:`weighted_loss`). A plain detector has one term, its
        :meth:`loss`; detectors with auxiliary objectives return one term per objective.

        In training, ``batch["seed"]`` is the batch's seed (derived by the loop from the run's
        seed, the architecture, the epoch and the batch's position): randomness inside a
        training step (e.g. an augmentation made from the model's own outputs) draws from it."""
        return {"loss": self.loss(logits, labels, batch)}


def weighted_loss(
    model: Detector, logits: torch.Tensor, labels: torch.Tensor, batch: dict | None = None
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The loss to minimise (the weighted sum of ``model.losses``) and its unweighted terms.

    A single term is returned as is (no multiplication), so plain detectors train exactly as
    with ``model.loss``.
    """
    terms = model.losses(logits, labels, batch)
    if not terms:
        raise ValueError(f"{type(model).__name__}.losses returned no loss term")
    if len(terms) == 1:
        return next(iter(terms.values())), terms
    weights = model.loss_weights
    total = sum(float(weights.get(name, 1.0)) * term for name, term in terms.items())
    return total, terms


def register(name: str, kind: str = "network") -> Callable[[type], type]:
    """Register a detector class of ``kind`` under ``name`` (the class learns its name)."""
    if kind not in KINDS:
        raise ValueError(f"detector {name!r}: kind must be one of {KINDS}, got {kind!r}")

    def wrap(cls: type) -> type:
        cls.name = name
        return DETECTORS.register(name, cls, kind=kind)

    return wrap


def list_detectors(kind: str | None = None) -> list[str]:
    """Registered detector names, all or those of one ``kind``."""
    return DETECTORS.names() if kind is None else DETECTORS.names(kind=kind)


def detector_entry(name: str) -> type:
    """The class registered under ``name`` (:class:`~fairforge.registry.UnknownName` if none)."""
    return DETECTORS.get(name)


def detector_kind(name: str) -> str:
    """``network``, ``classical`` or ``external``."""
    return DETECTORS.metadata(name)["kind"]


def create_detector(name: str, **config):
    """Build a registered detector; ``config`` holds its constructor arguments."""
    return DETECTORS.create(name, **config)
