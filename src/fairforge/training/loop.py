"""The one training loop: epochs of steps, validation, the best epoch, early stopping.

Every trainer (detectors, face encoders, the high-to-low GAN) runs :func:`run_loop` and
brings what differs as hooks, called in this order each epoch:

``start(epoch)``
    before its first step: the sampler's epoch, the learning rate, train mode;
``batches(epoch)``
    what the epoch steps through, drawn now (a shuffled order is drawn once per epoch);
``step(epoch, index, batch)``
    one optimisation step; what it returns is kept in ``epoch.outputs`` (and, over the
    run, :attr:`LoopResult.outputs`);
``validate(epoch)``
    after the last step: the epoch's score, and its log row in ``epoch.row``; without it
    nothing is watched, no epoch is best and training never stops early;
``on_best(epoch)``
    when the score is better than every earlier epoch's (``mode``: ``max`` or ``min``;
    ``keep_first``: the first epoch counts as better whatever its score): save the model.

Training stops early when ``patience`` epochs have passed since the best one, and at once,
before validation, once ``max_steps`` steps are done.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class Epoch:
    """One epoch as the hooks see it."""

    number: int
    #: what each step returned, in order
    outputs: list = field(default_factory=list)
    #: the epoch's log row, filled by ``validate``
    row: dict = field(default_factory=dict)
    score: float | None = None
    #: ``time.perf_counter()`` when its first step began (after ``start``)
    started: float = 0.0


@dataclass
class LoopResult:
    #: the log rows of the validated epochs, in order
    rows: list[dict]
    #: what every step returned, in order
    outputs: list
    #: the best epoch (the one before the first when none was: nothing watched, or no
    #: score ever better than the start) and its score
    best_epoch: int
    best_score: float
    #: the last epoch begun (None: no epoch was)
    last_epoch: int | None
    stopped_early: bool = False


def run_loop(
    epochs: Iterable[int],
    batches: Callable[[Epoch], Iterable],
    step: Callable[[Epoch, int, Any], Any],
    *,
    start: Callable[[Epoch], None] | None = None,
    validate: Callable[[Epoch], float] | None = None,
    on_best: Callable[[Epoch], None] | None = None,
    mode: str = "max",
    keep_first: bool = False,
    patience: int | None = None,
    max_steps: int | None = None,
    name: str = "training",
    watched: str = "validation score",
) -> LoopResult:
    """Train over ``epochs`` (their numbers, in order) with the hooks of the module's
    docstring; ``name`` and ``watched`` (what the score is) word the early-stopping log."""
    if mode not in ("max", "min"):
        raise ValueError(f"mode must be max or min, got {mode!r}")
    if patience is not None and patience < 1:
        raise ValueError(f"{name}: patience must be at least 1 epoch (or none), got {patience}")
    numbers = list(epochs)
    worst = -math.inf if mode == "max" else math.inf
    result = LoopResult([], [], (numbers[0] - 1) if numbers else 0, worst, None)
    steps = 0
    for number in numbers:
        epoch = Epoch(number)
        result.last_epoch = number
        if start is not None:
            start(epoch)
        epoch.started = time.perf_counter()
        for index, batch in enumerate(batches(epoch)):
            epoch.outputs.append(step(epoch, index, batch))
            steps += 1
            if max_steps is not None and steps >= max_steps:
                break
        result.outputs.extend(epoch.outputs)
        if max_steps is not None and steps >= max_steps:
            break
        if validate is None:
            continue
        epoch.score = score = validate(epoch)
        if epoch.row:
            result.rows.append(epoch.row)
        better = score > result.best_score if mode == "max" else score < result.best_score
        if better or (keep_first and number == numbers[0]):
            result.best_epoch, result.best_score = number, score
            if on_best is not None:
                on_best(epoch)
        if patience is not None and number - result.best_epoch >= patience:
            log.info("%s: no better %s for %d epochs: stopped", name, watched, patience)
            result.stopped_early = True
            break
    return result
