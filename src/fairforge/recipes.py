"""Training recipes as data: each paper's way of training, selectable per detector.

A :class:`Recipe` is the optimizer (``adam``, ``adamw``, ``sgd``; ``sam: true`` wraps any of
them in Sharpness-Aware Minimization; the names are :data:`fairforge.optimizers.OPTIMIZERS`'),
its betas, the learning-rate schedule (:data:`fairforge.optimizers.SCHEDULES`: ``constant``,
``step``, ``multistep``, ``cosine``, ``linear_decay``, each after an optional linear
warm-up), early stopping (``patience`` epochs without a better validation AUC), the number of
epochs, batch size, input size, frames per training and test video, the augmentation (with
the probability it fires and the epochs it waits) and class-balanced batches (half real, half
fake); and where it comes from: the start it assumes (``init``: ``random`` or ``imagenet``),
the ``source`` of its values and, per value, the paper section that states it (``cite``).

Two kinds of recipe, one mechanism (:func:`resolve_recipe`):

- a detector's own published recipe lives with the detector, on its registration
  (``@DETECTORS.register("xception", recipe=Recipe(...))`` in ``fairforge/detectors/xception.py``,
  :func:`fairforge.detectors.base.declared_recipe`); a config selects it with
  ``recipe: published`` or by the name the detector gives it (``sbi``);
- a paper's protocol that trains many detectors one way (DeepfakeBench's, the Assessment's)
  is a named recipe here, on :data:`RECIPES`, that the paper's config selects by name.

A config picks one with ``training.recipe`` or ``detectors.X.recipe`` and may override any
key; :func:`resolve_recipe` gives every value with its origin (``paper:<short name> §x``,
``recipe:<name>``, ``config``, ``default``, or ``unstated, fairforge default`` where a cited
recipe's paper leaves a value unstated, ``unstated, recipe:<name>`` where the recipe takes
that value from another named recipe), the one resolution the training rule and the
protocol card (:mod:`fairforge.protocol`) share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace

from fairforge.optimizers import ADAM_BETAS, OPTIMIZERS, SCHEDULES
from fairforge.registry import Registry

#: ``recipe: published`` selects the architecture's own recipe (its registration's).
PUBLISHED = "published"
#: Origins of a resolved value besides a recipe's citations.
CONFIG = "config"
DEFAULT = "default"
UNSTATED = "unstated, fairforge default"
#: The mark every "the paper leaves it open" origin starts with: :data:`UNSTATED`, or
#: :func:`unstated_by` where the value is a named recipe's.
UNSTATED_MARK = "unstated, "


def unstated_by(recipe: str) -> str:
    """The origin of a value a paper leaves open that a recipe takes from named recipe
    ``recipe`` (e.g. FairFD's weight decay: ``unstated, recipe:deepfakebench``)."""
    return f"{UNSTATED_MARK}recipe:{recipe}"


def unstated_recipe(source: str) -> str | None:
    """The named recipe of a value its paper leaves open (a ``source`` that starts
    :func:`unstated_by`), else None."""
    head = f"{UNSTATED_MARK}recipe:"
    return source[len(head) :].split()[0].rstrip(";") if source.startswith(head) else None


#: The flag of a detector trained from random weights where its paper starts from ImageNet.
NOT_PAPER_INIT = "not the paper's initialisation"
#: How a recipe's model starts: from random weights or from ImageNet weights.
INITS = ("random", "imagenet")
#: What a recipe may cite besides its keys: its start, and the normalisation the
#: architecture's class attributes hold.
CITED_FACTS = ("init", "normalisation")


@dataclass(frozen=True)
class Recipe:
    optimizer: str = "adam"
    lr: float = 2e-4
    weight_decay: float = 0.0
    #: SGD's momentum
    momentum: float = 0.9
    #: Adam's and AdamW's betas (torch's defaults unless a paper says otherwise)
    betas: tuple[float, float] = ADAM_BETAS
    sam: bool = False
    sam_rho: float = 0.05
    schedule: str = "constant"
    #: ``step``: the lr is multiplied by ``gamma`` every ``step_size`` epochs
    step_size: int = 10
    #: ``multistep``: ... at each of these epochs
    milestones: tuple[int, ...] = ()
    gamma: float = 0.1
    #: ``linear_decay``: the lr falls linearly to 0 from this fraction of the epochs on
    decay_start: float = 0.75
    #: epochs of linear warm-up from lr/warmup_epochs to lr before the schedule starts
    warmup_epochs: int = 0
    #: stop after this many epochs without a better validation AUC (None: never)
    patience: int | None = None
    epochs: int = 10
    batch_size: int = 32
    #: None: the architecture's own default input size
    input_size: int | None = None
    #: frames kept per training (and validation) video, and per test video (None: all)
    frames_train: int | None = None
    frames_test: int | None = None
    augment: str = "none"
    #: probability that the augmentation is applied to an image at all
    augment_prob: float = 1.0
    #: epochs trained on clean images before the augmentation starts
    augment_warmup: int = 0
    #: every batch half real, half fake (e.g. 16 + 16)
    balanced_batches: bool = False
    #: per-architecture overrides, e.g. ``{"capsule": {"epochs": 25, "lr": 5e-4}}``; an
    #: entry's ``cite`` (same form as the recipe's) replaces the recipe's citations of its keys
    per_arch: dict = field(default_factory=dict)
    # -- where the recipe comes from (not training keys)
    #: the start the recipe's model takes: ``random``, ``imagenet``; None: not stated
    init: str | None = None
    #: the paper the recipe states (a detector's published recipe): the origin of every value
    #: it sets, and a value it neither cites nor sets is ``unstated, fairforge default``;
    #: empty for a named recipe, whose values are ``recipe:<name>`` and the others ``default``
    source: str = ""
    #: per key (or ``init``, ``normalisation``), where its value is stated, also a value
    #: equal to the fairforge default, e.g. ``{"lr": "paper:Benchmark App. A"}``
    cite: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"optimizer must be one of {OPTIMIZERS.names()}, got {self.optimizer!r}"
            )
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES.names()}, got {self.schedule!r}")
        if not 0.0 <= self.augment_prob <= 1.0:
            raise ValueError(f"augment_prob must lie in [0, 1], got {self.augment_prob}")
        if self.balanced_batches and self.batch_size % 2:
            raise ValueError(f"balanced batches need an even batch_size, got {self.batch_size}")
        if self.init not in (None, *INITS):
            raise ValueError(f"init must be one of {INITS} or None, got {self.init!r}")
        if len(tuple(self.betas)) != 2:
            raise ValueError(f"betas must be two numbers, got {self.betas!r}")
        for arch, part in {None: {"cite": self.cite}, **self.per_arch}.items():
            unknown = sorted(set(part.get("cite", {})) - set(RECIPE_KEYS) - set(CITED_FACTS))
            if unknown:
                where = "cite" if arch is None else f"per_arch[{arch!r}]'s cite"
                raise ValueError(f"{where} names no recipe key: {unknown}")


def cited(where: str, *keys: str, **notes: str) -> dict[str, str]:
    """A recipe's ``cite`` table: each of ``keys`` stated by ``where``, and each key of
    ``notes`` by ``where`` with its note in brackets."""
    return {**dict.fromkeys(keys, where), **{k: f"{where} ({n})" for k, n in notes.items()}}


#: Fields that say where a recipe comes from, not how to train.
PROVENANCE = ("per_arch", "init", "source", "cite")
#: The keys a config may override (every training field).
RECIPE_KEYS = tuple(f.name for f in fields(Recipe) if f.name not in PROVENANCE)

RECIPES: Registry = Registry("recipe")

RECIPES.register(
    "deepfakebench",
    Recipe(
        lr=2e-4,
        weight_decay=5e-4,
        epochs=10,
        batch_size=32,
        input_size=256,
        frames_train=32,
        frames_test=32,
        augment="deepfakebench",
        # its detector configs state these, the defaults among them (Adam's betas, no lr
        # scheduler)
        cite=cited(
            "recipe:deepfakebench",
            "optimizer",
            "lr",
            "betas",
            "weight_decay",
            "schedule",
            "epochs",
            "batch_size",
            "input_size",
            "frames_train",
            "frames_test",
            "augment",
        ),
    ),
    paper="DeepfakeBench's detector configs",
)
# FairFD §5.1 states the optimizer (Adam), lr 0.0002, 10 epochs, batch 32, the augmentation
# (image compression, horizontal flip and rotation; `fairfd` draws them with DeepfakeBench's
# probabilities and ranges) and, for its FF++ training data, 32 frames per video and crops
# resized to 256 x 256 (Table 4's balanced twins double the epochs: §5.3.1, in the config).
# The rest it leaves open: it trains on DeepfakeBench's preprocessed FF++ (§5.1) and follows
# its hyperparameters (A.6), so Adam's betas, the weight decay, the constant lr (no
# scheduler) and the 32 frames per test video are DeepfakeBench's detector configs'
# (`unstated, recipe:deepfakebench`); early stopping and the rest fairforge's defaults. So
# the recipe is DeepfakeBench's with FairFD's augmentation, every value cited anew.
_FAIRFD = "paper:FairFD §5.1"
RECIPES.register(
    "fairfd",
    replace(
        RECIPES.get("deepfakebench"),
        augment="fairfd",
        source=_FAIRFD,
        cite={
            **cited(
                _FAIRFD,
                "lr",
                "epochs",
                "batch_size",
                optimizer="Adam",
                sam="Adam",
                input_size="crops resized to 256 x 256",
                frames_train="32 frames per FF++ video",
                augment="image compression, horizontal flip and rotation",
            ),
            **cited(
                unstated_by("deepfakebench"), "betas", "weight_decay", "schedule", "frames_test"
            ),
        },
    ),
    paper="FairFD §5.1 (Adam 2e-4, batch 32, 10 epochs; compression, flip, rotation)",
)
# Assessment §5.1.3: Adam (β 0.9, 0.999) for Capsule-Forensics (25 epochs, lr 5e-4),
# XceptionNet (10, 1e-3) and UIA-ViT (8, 3e-5); SBI's EfficientNet-B4 by SAM, 100 epochs,
# batch 32, lr 1e-3; for every detector faces at 300 x 300, 100 frames per training video and
# 32 per validation and test video; no augmentation (§3.3: the operations are not applied to
# the training data). Batch 32 of the three, weight decay, lr schedule and early stopping are
# unstated (fairforge's defaults); SAM's base optimizer (SGD, momentum 0.9), its rho and the
# linear decay over the last quarter are SBI's own (Shiohara & Yamasaki 2022, §4.1 and its
# code: the `sbi` recipe on EfficientNet-B4's registration). An architecture the paper does
# not train takes the recipe's lr and epochs (`recipe:assessment`).
_ASSESSMENT = "paper:Assessment §5.1.3"
_ADAM = cited(_ASSESSMENT, "epochs", "lr", optimizer="Adam", sam="Adam", betas="Adam")
RECIPES.register(
    "assessment",
    Recipe(
        lr=1e-3,
        epochs=10,
        batch_size=32,
        input_size=300,
        frames_train=100,
        frames_test=32,
        source=_ASSESSMENT,
        cite={
            **cited("recipe:assessment", "lr", "epochs"),
            **cited(
                _ASSESSMENT,
                input_size="face regions resized to 300x300",
                frames_train="100 frames per training video",
                frames_test="32 frames per validation and test video",
            ),
            "augment": "paper:Assessment §3.3 (training data without the operations)",
        },
        per_arch={
            "capsule": {"epochs": 25, "lr": 5e-4, "cite": _ADAM},
            "xception": {"epochs": 10, "lr": 1e-3, "cite": _ADAM},
            "uia_vit": {"epochs": 8, "lr": 3e-5, "cite": _ADAM},
            "efficientnet_b4": {
                "optimizer": "sgd",
                "momentum": 0.9,
                "sam": True,
                "epochs": 100,
                "lr": 1e-3,
                "schedule": "linear_decay",
                "decay_start": 0.75,
                "cite": {
                    **cited(_ASSESSMENT, "epochs", "lr", "batch_size", sam="SAM"),
                    **cited(
                        unstated_by("sbi"),
                        "optimizer",
                        "momentum",
                        "sam_rho",
                        "schedule",
                        "decay_start",
                    ),
                },
            },
        },
    ),
    paper=(
        "Assessment paper §5.1.3 (Adam; Capsule 25 epochs 5e-4, Xception 10 1e-3, UIA-ViT 8 "
        "3e-5; SBI's EfficientNet-B4 SAM 100 epochs 1e-3; 300 px, 100 / 32 frames per "
        "training / test video, no augmentation)"
    ),
)


def arch_part(recipe: Recipe, arch: str | None = None) -> tuple[dict, dict]:
    """``recipe``'s values for ``arch`` (its ``per_arch`` entry) and its citations there
    (the recipe's, the entry's ``cite`` over them)."""
    values = dict(recipe.per_arch.get(arch, {}))
    return values, {**recipe.cite, **values.pop("cite", {})}


def stated(recipe: Recipe, arch: str | None = None) -> set[str]:
    """The keys ``recipe`` states for ``arch``: those it cites, sets away from the default,
    or sets for the architecture."""
    default = Recipe()
    values, cite = arch_part(recipe, arch)
    keys = {k for k in RECIPE_KEYS if getattr(recipe, k) != getattr(default, k)}
    return keys | (set(cite) & set(RECIPE_KEYS)) | set(values)


def origin(recipe: Recipe, name: str, key: str, arch: str | None = None) -> str:
    """Where ``recipe``'s value of ``key`` (or ``init``) comes from: its citation (for
    ``arch``), else the recipe's source (``recipe:<name>`` unless it names one); a value it
    does not state is the fairforge default, ``unstated`` by a recipe that states a paper."""
    cite = arch_part(recipe, arch)[1]
    if key in cite:
        return cite[key]
    if key in stated(recipe, arch) or (key == "init" and recipe.init is not None):
        return recipe.source or f"recipe:{name}"
    return UNSTATED if recipe.source else DEFAULT


def resolve_recipe(
    recipe: Recipe, name: str, arch: str | None = None, *layers: tuple[str, Mapping]
) -> tuple[dict, dict]:
    """``recipe`` (registered as ``name``) resolved for ``arch``: its values, then its
    per-architecture values, then each ``(origin, overrides)`` layer in turn (``None``
    values are ignored). Returns the flat values (:data:`RECIPE_KEYS` plus ``recipe``) and,
    per key, where the value comes from (:func:`origin`, or the layer's origin)."""
    values = arch_part(recipe, arch)[0]
    sources = {k: origin(recipe, name, k, arch) for k in RECIPE_KEYS}
    for where, overrides in layers:
        unknown = sorted(set(overrides) - set(RECIPE_KEYS))
        if unknown:
            raise KeyError(f"not recipe keys: {unknown}; recipe keys are {list(RECIPE_KEYS)}")
        given = {k: v for k, v in overrides.items() if v is not None}
        values.update(given)
        sources.update(dict.fromkeys(given, where))
    for key in ("milestones", "betas"):
        if key in values:
            values[key] = tuple(values[key])
    resolved = {k: v for k, v in asdict(replace(recipe, **values)).items() if k in RECIPE_KEYS}
    resolved["milestones"] = list(resolved["milestones"])
    resolved["betas"] = list(resolved["betas"])
    return {"recipe": name, **resolved}, sources


def recipe_settings(name: str, arch: str | None = None, **overrides) -> dict:
    """The resolved named recipe ``name`` (:data:`RECIPES`) for ``arch``: its values, then
    its per-architecture values, then ``overrides`` (``None`` values are ignored); a flat
    dict of :data:`RECIPE_KEYS` plus ``recipe``."""
    return resolve_recipe(RECIPES.get(name), name, arch, (CONFIG, overrides))[0]
