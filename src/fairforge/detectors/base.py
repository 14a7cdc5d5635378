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

A registration also carries, as data, what the detector's papers say about training it (the
timm habit of a default config beside each model's registration, DeepfakeBench's one
training yaml per detector): its published :class:`~fairforge.recipes.Recipe` (``recipe``;
``recipe_name`` lets a config select it by a name of its own, ``sbi``), how ImageNet (or the
authors') weights map onto it (``pretrained``, a :class:`PretrainedLayout`, applied by
:mod:`fairforge.detectors.pretrained`), and how DeepfakeBench checkpoints map onto it
(``deepfakebench``: DeepfakeBench ``model_name`` → :class:`DeepfakeBenchLayout`, applied by
:mod:`fairforge.detectors.deepfakebench`). Those two modules and :mod:`fairforge.recipes`
keep only the mechanism.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.recipes import PUBLISHED, Recipe
from fairforge.registry import Registry, UnknownName

KINDS = ("network", "classical", "external")

# Where the registrations' recipes cite their values (docs/papers.md's short names).
BENCHMARK_APP_A = "paper:Benchmark App. A"
BENCHMARK_TABLE_3 = "paper:Benchmark Table 3"
DEEPFAKEBENCH_IMAGENET = "DeepfakeBench (Yan et al. 2023): every model but MesoNet from ImageNet"

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

    def penultimate(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features ``(B, D)`` of a normalised batch (the feature space of FairFD
        A.7): by default the input of the last linear layer the forward pass runs (the
        classifier of every linear head), flattened per image. A detector whose final layer
        is not linear overrides it (Capsule). Call it in eval mode under ``torch.no_grad``,
        as inference runs the model."""
        captured: list[torch.Tensor] = []
        hooks = [
            m.register_forward_pre_hook(lambda _m, args: captured.append(args[0]))
            for m in self.modules()
            if isinstance(m, nn.Linear)
        ]
        try:
            self(x)
        finally:
            for hook in hooks:
                hook.remove()
        if not captured:
            raise NotImplementedError(
                f"{type(self).__name__} runs no linear layer: it must override "
                "Detector.penultimate to name its penultimate features"
            )
        last = captured[-1]
        if last.shape[0] != x.shape[0]:
            raise NotImplementedError(
                f"{type(self).__name__}'s last linear layer sees {tuple(last.shape)} for a "
                f"batch of {x.shape[0]}: it must override Detector.penultimate"
            )
        return last.reshape(x.shape[0], -1)

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


@dataclass(frozen=True)
class PretrainedTarget:
    """One module of a detector (dotted attribute path) filled from a pretrained file."""

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
    """Which modules of a detector take pretrained weights, and how the file's names map."""

    targets: tuple[PretrainedTarget, ...]
    #: the file each published model starts from (for the docs, the card and the error
    #: that asks for it)
    source: str = ""
    #: the timm model whose ImageNet weights fit (``pretrained: timm:<name>``)
    timm: str = ""


@dataclass(frozen=True)
class DeepfakeBenchLayout:
    """How one DeepfakeBench model's state dict maps onto the detector registered with it."""

    rules: tuple[tuple[str, object], ...]  # (regex on DeepfakeBench key, replacement)
    ignore: tuple[str, ...] = ()  # DeepfakeBench keys with no counterpart
    # our single-logit linear layer(s) from DeepfakeBench's two-class ones, if any
    head: str | tuple[str, ...] | None = None
    # our buffers DeepfakeBench does not save (regex, their initial value from the shape)
    fill: tuple[tuple[str, Callable[[torch.Size], torch.Tensor]], ...] = ()


def _check_detector(name: str, cls: type, meta: dict) -> dict:
    """A detector registration, ``@DETECTORS.register(name, kind="network", recipe=...,
    recipe_name=..., pretrained=..., deepfakebench=...)``: a class of ``kind`` (the class
    learns its name), with its published ``recipe`` (selected by ``recipe: published``, or by
    ``recipe_name``), its ``pretrained`` layout (a :class:`PretrainedLayout`) and its
    ``deepfakebench`` layouts (DeepfakeBench ``model_name`` → :class:`DeepfakeBenchLayout`)."""
    meta = {
        "kind": "network",
        "recipe": None,
        "recipe_name": None,
        "pretrained": None,
        **meta,
        "deepfakebench": dict(meta.get("deepfakebench") or {}),
    }
    unknown = set(meta) - {"kind", "recipe", "recipe_name", "pretrained", "deepfakebench"}
    if unknown:
        raise TypeError(f"detector {name!r}: unknown registration keys {sorted(unknown)}")
    kind, recipe, recipe_name = meta["kind"], meta["recipe"], meta["recipe_name"]
    if kind not in KINDS:
        raise ValueError(f"detector {name!r}: kind must be one of {KINDS}, got {kind!r}")
    if recipe is None and recipe_name is not None:
        raise ValueError(f"detector {name!r}: recipe_name {recipe_name!r} names no recipe")
    if recipe_name is not None and not re.fullmatch(r"[a-z0-9_]+", recipe_name):
        raise ValueError(f"detector {name!r}: recipe_name must be a lowercase name")
    cls.name = name
    return meta


DETECTORS: Registry = Registry("detector", check=_check_detector)


def stated_start(init: str, where: str) -> Recipe:
    """The published recipe of a detector whose papers, as fairforge reads them, state how it
    starts (``init``, cited to ``where``) and no training value: every other value is
    ``unstated, fairforge default`` on the protocol card."""
    return Recipe(init=init, source=where, cite={"init": where})


def declared_recipes() -> dict[str, tuple[str, Recipe]]:
    """Recipe name → (detector, recipe) of every published recipe a detector names
    (``recipe_name``), e.g. ``sbi``."""
    out: dict[str, tuple[str, Recipe]] = {}
    for arch in DETECTORS.names():
        meta = DETECTORS.metadata(arch)
        name = meta.get("recipe_name")
        if name and name in out and out[name][1] is not meta["recipe"]:
            raise ValueError(f"recipe {name!r} is declared by {out[name][0]} and {arch}")
        if name and name not in out:
            out[name] = (arch, meta["recipe"])
    return out


def declared_recipe(name: str, arch: str) -> Recipe:
    """A recipe declared on a registration: ``published``, ``arch``'s own; else the one a
    detector names ``name``. Unknown names (or a network without a published recipe) are
    :class:`~fairforge.registry.UnknownName`, listing the valid names; a detector of another
    kind (``classical``, ``external``) trains by no recipe and gets an empty one."""
    if name == PUBLISHED:
        meta = DETECTORS.metadata(arch)
        recipe = meta.get("recipe")
        if recipe is None and meta["kind"] != "network":
            return Recipe()  # a landmark model or a score file trains by no recipe
        if recipe is None:
            with_recipe = [a for a in DETECTORS.names() if DETECTORS.metadata(a).get("recipe")]
            raise UnknownName("published recipe (recipe: published) of detector", arch, with_recipe)
        return recipe
    named = declared_recipes()
    if name not in named:
        raise UnknownName("recipe", name, [PUBLISHED, *sorted(named)])
    return named[name][1]


def paper_init(arch: str) -> tuple[str | None, str]:
    """How ``arch``'s published model starts (``random``, ``imagenet``; None: its recipe
    does not say, or it has none) and where that is stated."""
    recipe = DETECTORS.metadata(arch).get("recipe")
    if recipe is None or recipe.init is None:
        return None, ""
    return recipe.init, recipe.cite.get("init") or recipe.source


def list_detectors(kind: str | None = None) -> list[str]:
    """Registered detector names, all or those of one ``kind``."""
    return DETECTORS.names() if kind is None else DETECTORS.names(kind=kind)


def detector_kind(name: str) -> str:
    """``network``, ``classical`` or ``external``."""
    return DETECTORS.metadata(name)["kind"]


def create_detector(name: str, **config):
    """Build a registered detector; ``config`` holds its constructor arguments."""
    return DETECTORS.create(name, **config)
