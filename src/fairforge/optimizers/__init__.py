"""The optimizers and learning-rate schedules every trainer picks by name: one registry each.

:data:`OPTIMIZERS` builds ``adam``, ``adamw`` and ``sgd`` on torch; ``sam: true`` wraps any
of them in Sharpness-Aware Minimization (:class:`fairforge.optimizers.sam.SAM`,
:func:`make_optimizer`). :data:`SCHEDULES` gives the learning rate of an epoch
(:func:`epoch_lr`, after an optional linear warm-up): ``constant``, ``step``, ``multistep``,
``cosine`` and ``linear_decay``, the recipes' (:mod:`fairforge.recipes`), computed from the
base lr in closed form; and ``decay_after``, the face encoders' (FaceX-Zoo's, as the Exposure
paper trains them): the lr multiplied by ``gamma`` after each epoch of ``milestones``, in
turn, as torch's ``MultiStepLR`` does. The detectors, the encoders and the high-to-low GAN
all build their optimizers here (:mod:`fairforge.training`).

Importing this module imports no torch (a builder imports it when called): recipes check
their names against these registries, and the workflow reads recipes while it plans.
"""

from __future__ import annotations

import math

from fairforge.registry import Registry

OPTIMIZERS: Registry = Registry("optimizer")
SCHEDULES: Registry = Registry("schedule")

#: torch's Adam betas, which every recipe uses; the high-to-low GAN sets its own.
ADAM_BETAS = (0.9, 0.999)


@OPTIMIZERS.register("adam")
def adam(params, lr: float, weight_decay: float = 0.0, momentum: float = 0.9, betas=ADAM_BETAS):
    import torch

    return torch.optim.Adam(params, lr=lr, betas=tuple(betas), weight_decay=weight_decay)


@OPTIMIZERS.register("adamw")
def adamw(params, lr: float, weight_decay: float = 0.0, momentum: float = 0.9, betas=ADAM_BETAS):
    import torch

    return torch.optim.AdamW(params, lr=lr, betas=tuple(betas), weight_decay=weight_decay)


@OPTIMIZERS.register("sgd")
def sgd(params, lr: float, weight_decay: float = 0.0, momentum: float = 0.9, betas=ADAM_BETAS):
    import torch

    return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)


def build_optimizer(
    params, optimizer: str, lr: float, weight_decay: float = 0.0, momentum: float = 0.9, **kw
):
    """The optimizer registered as ``optimizer`` over ``params`` (a list is made of them)."""
    return OPTIMIZERS.create(optimizer, list(params), lr, weight_decay, momentum, **kw)


def make_optimizer(params, settings):
    """The optimizer that ``settings`` (a dict, a :class:`~fairforge.recipes.Recipe` or
    anything with its attributes) asks for: ``optimizer`` (adam), ``lr``, ``weight_decay``
    (0), ``momentum`` (0.9), ``betas`` (torch's), SAM-wrapped with ``sam_rho`` if ``sam``."""
    if isinstance(settings, dict):
        get = settings.get
    else:

        def get(key, default=None):
            return getattr(settings, key, default)

    base = build_optimizer(
        params,
        get("optimizer", "adam"),
        get("lr"),
        get("weight_decay", 0.0),
        get("momentum", 0.9),
        betas=get("betas", ADAM_BETAS),
    )
    if not get("sam", False):
        return base
    from fairforge.optimizers.sam import SAM

    return SAM(base, get("sam_rho", 0.05))


# --------------------------------------------------------------------------- schedules
# Each takes the base lr, the 1-based epoch, the epochs of schedule done before it (after
# the warm-up) and the schedule's length, and gives the epoch's lr. Metadata ``words``: the
# schedule in words for the protocol card, from a resolved recipe's values (else its name).


@SCHEDULES.register("constant")
def constant(lr: float, epoch: int, done: int, span: int, **_) -> float:
    return lr * 1.0


@SCHEDULES.register("step", words=lambda v: f"step: x{v['gamma']:g} every {v['step_size']} epochs")
def step(lr: float, epoch: int, done: int, span: int, step_size: int = 10, gamma=0.1, **_):
    """``gamma`` times less every ``step_size`` epochs."""
    return lr * gamma ** (done // max(1, step_size))


@SCHEDULES.register(
    "multistep", words=lambda v: f"multistep: x{v['gamma']:g} at epochs {list(v['milestones'])}"
)
def multistep(lr: float, epoch: int, done: int, span: int, milestones=(), gamma=0.1, **_):
    """``gamma`` times less from each epoch of ``milestones`` on."""
    return lr * gamma ** sum(epoch >= m for m in milestones)


@SCHEDULES.register("cosine")
def cosine(lr: float, epoch: int, done: int, span: int, **_) -> float:
    return lr * (0.5 * (1.0 + math.cos(math.pi * done / span)))


@SCHEDULES.register(
    "linear_decay", words=lambda v: f"linear_decay: to 0 from {v['decay_start']:.0%} of the epochs"
)
def linear_decay(lr: float, epoch: int, done: int, span: int, decay_start=0.75, **_) -> float:
    """Constant, then falling linearly to 0 from ``decay_start`` of the epochs on."""
    start = int(span * decay_start)
    return lr * (1.0 if done < start else max(0.0, 1.0 - (done - start) / max(1, span - start)))


@SCHEDULES.register("decay_after")
def decay_after(lr: float, epoch: int, done: int, span: int, milestones=(), gamma=0.1, **_):
    """Multiplied by ``gamma`` once each epoch of ``milestones`` is over (by ``gamma``
    to the power n for an epoch listed n times), one epoch after another as torch's
    ``MultiStepLR`` does: a milestone m decays the lr from epoch m + 1 on."""
    milestones = list(milestones)
    for finished in range(1, epoch):
        if n := milestones.count(finished):
            lr = lr * gamma**n
    return lr


def epoch_lr(
    lr: float, epoch: int, epochs: int, schedule: str = "constant", warmup_epochs: int = 0, **params
) -> float:
    """The learning rate of 1-based ``epoch`` of ``epochs`` for base rate ``lr``: rising
    linearly from lr/warmup_epochs to lr over ``warmup_epochs``, then by ``schedule`` with
    its ``params`` (``step_size``, ``milestones``, ``gamma``, ``decay_start``)."""
    rule = SCHEDULES.get(schedule)
    if epoch <= warmup_epochs:
        return lr * (epoch / warmup_epochs)
    done = epoch - warmup_epochs - 1  # epochs of schedule done before this one
    return rule(lr, epoch, done, max(1, epochs - warmup_epochs), **params)


def lr_factor(
    epoch: int,
    epochs: int,
    schedule: str = "constant",
    warmup_epochs: int = 0,
    step_size: int = 10,
    milestones=(),
    gamma: float = 0.1,
    decay_start: float = 0.75,
) -> float:
    """The learning rate of 1-based ``epoch`` as a multiple of the base lr."""
    return epoch_lr(
        1.0,
        epoch,
        epochs,
        schedule,
        warmup_epochs,
        step_size=step_size,
        milestones=milestones,
        gamma=gamma,
        decay_start=decay_start,
    )


def set_lr(optimizer, lr: float) -> float:
    """Give every parameter group of ``optimizer`` the learning rate ``lr``; returns it."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    return lr
