"""Every detector, whatever its kind, trained, scored and costed through one interface.

A registered detector's ``kind`` (metadata on :data:`fairforge.detectors.DETECTORS`) names a
:class:`DetectorKind` on :data:`DETECTOR_KINDS`, which knows how every detector of that kind
is fitted (:meth:`~DetectorKind.fit`), scored into the predictions contract
(:meth:`~DetectorKind.score`) and costed (:meth:`~DetectorKind.cost`). The entry points
:func:`train_detector`, :func:`predict` and :func:`detector_cost` only look the kind up, so
adding a detector of an existing kind is one registration, and a new kind is one class here.

``network``
    the shared torch protocol (:mod:`fairforge.training.detector`), batched inference
    (:mod:`fairforge.inference`) and the cost of a forward pass (:mod:`fairforge.efficiency`);
``classical``
    dlib landmarks of the same train and validation sets, fitted by the detector itself; a
    face without landmarks scores 0.5 (the detector abstains rather than guesses);
``external``
    a score file checked against the samples manifest: nothing is trained, run or timed.
"""

from __future__ import annotations

import logging
import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from fairforge.columns import CLEAN
from fairforge.detectors import DETECTORS, detector_kind
from fairforge.detectors.headpose import sample_landmarks
from fairforge.efficiency import checkpoint_efficiency_rows
from fairforge.inference import (
    network_scores,
    one_row_per_video,
    prediction_frame,
    scored_frame,
)
from fairforge.metrics.detection import auc
from fairforge.registry import Registry
from fairforge.runtime import checkpoint_arch
from fairforge.training.detector import TrainConfig, train_network, training_sets
from fairforge.video import loading_variant

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoreRequest:
    """What one prediction job asks of a detector, whatever its kind: built once, by
    :func:`predict`, and handed to :meth:`DetectorKind.score` with the samples.

    ``model`` is a checkpoint or (external kind) a score file; the samples of ``splits`` are
    scored under ``variant`` (``variant_options`` its operations' settings), and of a video
    the ``frames`` that ``pick`` picks (:func:`fairforge.data.frames_to_score`; None: every
    frame). ``batch_size``, ``num_workers``, ``device`` and ``memory_mb`` (a bound on the
    loader's queue) say how a network is run.
    """

    arch: str
    model: str | Path
    results_dir: str | Path
    detector: str
    variant: str = CLEAN
    splits: tuple[str, ...] = ("val", "test")
    batch_size: int = 64
    num_workers: int = 0
    device: str = "auto"
    variant_options: dict | None = None
    memory_mb: float | None = None
    frames: int | None = None
    pick: str = "spaced"


class DetectorKind(ABC):
    """How the detectors of one kind are trained, run and costed."""

    @abstractmethod
    def fit(
        self,
        samples: pd.DataFrame,
        results_dir: str | Path,
        settings: TrainConfig,
        out_path: str | Path,
    ) -> pd.DataFrame:
        """Train ``settings.arch`` on ``samples``, write its model to ``out_path`` and
        return the training log (one row per epoch)."""

    @abstractmethod
    def score(self, samples: pd.DataFrame, request: ScoreRequest) -> pd.DataFrame:
        """Predictions (the contract) of ``request.model`` (a checkpoint or a score file)
        on the ``samples`` the request selects (:class:`ScoreRequest`)."""

    @abstractmethod
    def cost(
        self, model: str | Path, detector: str, device: str, batch_sizes, repeats: int
    ) -> dict:
        """One row of the efficiency table."""

    def costs(
        self,
        models: dict[str, str | Path],
        device: str,
        batch_sizes,
        rounds: int,
        repeats: int,
        threads: int | None = None,
    ) -> list[dict]:
        """The efficiency-table rows of several detectors of this kind (name → model file),
        in order, timed with ``threads`` torch threads (None: as set): by default each on its
        own (:meth:`cost`)."""
        return [
            self.cost(path, name, device, batch_sizes, repeats) for name, path in models.items()
        ]


DETECTOR_KINDS: Registry = Registry("detector kind")


@DETECTOR_KINDS.register("network")
class NetworkKind(DetectorKind):
    def fit(self, samples, results_dir, settings, out_path):
        return train_network(samples, results_dir, settings, out_path)

    def score(self, samples, request):
        r = request
        frame = scored_frame(samples, r.splits, r.variant, r.frames, r.pick)
        scores = network_scores(
            r.model,
            frame,
            r.results_dir,
            r.variant,
            r.batch_size,
            r.num_workers,
            r.device,
            r.variant_options,
            r.memory_mb,
        )
        predictions = prediction_frame(frame, r.detector, r.variant, scores)
        if getattr(DETECTORS.get(r.arch), "sequence_input", False):  # scored per video
            return one_row_per_video(predictions)
        return predictions

    def cost(self, model, detector, device, batch_sizes, repeats):
        return checkpoint_efficiency_rows({detector: model}, device, batch_sizes, repeats=repeats)[
            0
        ]

    def costs(self, models, device, batch_sizes, rounds, repeats, threads=None):
        """Timed together, turn by turn, with the same-architecture check
        (:func:`fairforge.efficiency.checkpoint_efficiency_rows`)."""
        return checkpoint_efficiency_rows(models, device, batch_sizes, rounds, repeats, threads)


@DETECTOR_KINDS.register("classical")
class ClassicalKind(DetectorKind):
    def fit(self, samples, results_dir, settings, out_path):
        start = time.perf_counter()
        train, val = training_sets(samples, settings)
        model = DETECTORS.create(settings.arch, **settings.model)
        model.fit(sample_landmarks(train, results_dir), train["label"].to_numpy())
        scores = model.predict_proba(sample_landmarks(val, results_dir))
        found = np.isfinite(scores)
        model.save(out_path)
        return pd.DataFrame(
            [
                {
                    "epoch": 1,
                    "train_loss": math.nan,
                    "val_loss": math.nan,
                    "val_auc": auc(val["label"].to_numpy()[found], scores[found]),
                    "n_train": len(train),
                    "n_val": len(val),
                    "seconds": time.perf_counter() - start,
                }
            ]
        )

    def score(self, samples, request):
        r = request
        frame = scored_frame(samples, r.splits, r.variant, r.frames, r.pick)
        fitted = DETECTORS.get(r.arch).load(r.model)
        landmarks = sample_landmarks(
            frame, r.results_dir, loading_variant(r.variant), variant_options=r.variant_options
        )
        scores = fitted.predict_proba(landmarks)
        missing = ~np.isfinite(scores)
        if missing.any():
            log.warning(
                "%d of %d faces had no landmarks under %s; scored 0.5",
                int(missing.sum()),
                len(scores),
                loading_variant(r.variant),
            )
        scores = np.where(missing, np.float32(0.5), scores).astype(np.float32)
        return prediction_frame(frame, r.detector, r.variant, scores)

    def cost(self, model, detector, device, batch_sizes, repeats):
        return {"detector": detector, "note": "classical detector: cost is dlib landmarks + SVM"}


@DETECTOR_KINDS.register("external")
class ExternalKind(DetectorKind):
    def fit(self, samples, results_dir, settings, out_path):
        raise ValueError(
            f"detector {settings.arch!r} is external: it brings its own scores, "
            "there is nothing to train"
        )

    def score(self, samples, request):
        # the score file holds what the detector scored elsewhere: no frames are picked here
        r = request
        return DETECTORS.create(r.arch, r.model).predictions(
            samples, r.detector, r.variant, r.splits
        )

    def cost(self, model, detector, device, batch_sizes, repeats):
        return {"detector": detector, "note": "external detector: scored elsewhere"}


def kind_of(arch: str) -> DetectorKind:
    """The kind of the registered detector ``arch``."""
    return DETECTOR_KINDS.create(detector_kind(arch))


def train_detector(
    samples: pd.DataFrame,
    root: str | Path,
    cfg: TrainConfig,
    checkpoint_path: str | Path,
    log_path: str | Path | None = None,
) -> pd.DataFrame:
    """Train ``cfg.arch``, of any kind, and save its model; returns (and writes) the log."""
    log_table = kind_of(cfg.arch).fit(samples, root, cfg, checkpoint_path)
    if log_path is not None:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        log_table.to_csv(log_path, index=False)
    return log_table


def predict(
    model: str | Path,
    samples: pd.DataFrame,
    root: str | Path,
    detector: str,
    variant: str = CLEAN,
    splits=("val", "test"),
    batch_size: int = 64,
    num_workers: int = 0,
    device: str = "auto",
    threads: int = 1,
    variant_options: dict | None = None,
    arch: str | None = None,
    memory_mb: float | None = None,
    frames_test: int | None = None,
    frames_test_pick: str | None = None,
) -> pd.DataFrame:
    """Predictions of ``detector`` on the samples of ``splits`` under ``variant``.

    ``model`` is a checkpoint (its architecture is read from it, its weights loaded once)
    or, with ``arch="external"``, a score file. ``memory_mb`` bounds the loader's queue.
    ``frames_test``: frames scored per video (None: every frame), picked as
    ``frames_test_pick`` says (:func:`frame_pick`); a score file is taken as it is.
    """
    torch.set_num_threads(max(1, threads))
    arch = arch or checkpoint_arch(model)
    request = ScoreRequest(
        arch=arch,
        model=model,
        results_dir=root,
        detector=detector,
        variant=variant,
        splits=tuple(splits),
        batch_size=batch_size,
        num_workers=num_workers,
        device=device,
        variant_options=variant_options,
        memory_mb=memory_mb,
        frames=frames_test,
        pick=frame_pick(arch, frames_test_pick),
    )
    return kind_of(arch).score(samples, request)


def frame_pick(arch: str, pick: str | None = None) -> str:
    """How a detector's test frames are picked (:data:`fairforge.data.FRAME_PICKS`):
    ``pick`` if given, else the architecture's own: the ``first`` frames, a consecutive clip,
    for a video detector (``sequence_input``), frames ``spaced`` over the video for the
    others."""
    if pick is not None:
        return pick
    return "first" if getattr(DETECTORS.get(arch), "sequence_input", False) else "spaced"


def detector_cost(
    model: str | Path,
    detector: str,
    device: str = "auto",
    batch_sizes=(1, 32),
    repeats: int = 10,
    arch: str | None = None,
) -> dict:
    """The efficiency-table row of a trained detector (a note for kinds with no network)."""
    arch = arch or checkpoint_arch(model)
    return kind_of(arch).cost(model, detector, device, batch_sizes, repeats)


def detector_costs(
    models: dict[str, str | Path],
    device: str = "auto",
    batch_sizes=(1, 32),
    rounds: int = 5,
    repeats: int = 10,
    threads: int | None = None,
) -> list[dict]:
    """The efficiency table of trained detectors (name → model file), one row each in order:
    the detectors of each kind costed together by their kind (:meth:`DetectorKind.costs`:
    the networks timed turn by turn with ``threads`` torch threads and the
    same-architecture check, other kinds give their note)."""
    by_kind: dict[str, dict[str, str | Path]] = {}
    for name, path in models.items():
        by_kind.setdefault(detector_kind(checkpoint_arch(path)), {})[name] = path
    rows = {}
    for kind, members in by_kind.items():
        kind_of_members = DETECTOR_KINDS.create(kind)
        costed = kind_of_members.costs(members, device, batch_sizes, rounds, repeats, threads)
        rows |= dict(zip(members, costed, strict=True))
    return [rows[name] for name in models]
