"""One training protocol for every detector (FairFD: Adam, lr 2e-4, batch 32).

Train and validation sets come from the samples manifest's train and val splits, restricted
to the real images and the detector's training methods (:func:`training_sets`, shared by every
kind of detector). This module trains the network detectors (:func:`train_network`, on
:func:`fairforge.training.loop.run_loop`): the checkpoint with the best validation AUC is
kept, together with the architecture name and the config that built it, so that
:func:`fairforge.runtime.load_checkpoint` can rebuild the model with ``weights_only=True``.
:mod:`fairforge.detector_kinds` trains a detector of any kind.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader, RandomSampler

from fairforge.balance import balance_subjects
from fairforge.checkpoints import read_state_dict
from fairforge.data import (
    BalancedBatchSampler,
    EpochSampler,
    FaceDataset,
    OnlineForgeryDataset,
    SequenceDataset,
    mask_supervised,
    sequence_groups,
    supervision_columns,
)
from fairforge.detectors import DETECTORS, create_detector
from fairforge.detectors.base import weighted_loss
from fairforge.detectors.deepfakebench import (
    CheckpointMismatch,
    load_deepfakebench,
    map_deepfakebench_state,
)
from fairforge.detectors.pretrained import apply_pretrained, check_frozen_start, require_start
from fairforge.manifest import read_manifest
from fairforge.metrics.detection import auc
from fairforge.optimizers import epoch_lr, make_optimizer, set_lr
from fairforge.optimizers.sam import SAM
from fairforge.paths import result_path
from fairforge.perturb.augment import create_augment
from fairforge.runtime import (
    PRECISIONS,
    autocast,
    load_checkpoint,
    pick_device,
    read_checkpoint,
    write_checkpoint,
)
from fairforge.samples import REAL
from fairforge.seeding import derive_seed
from fairforge.training.loop import run_loop

log = logging.getLogger(__name__)

#: bf16 inference is kept only if it moves the validation AUC by less than this.
BF16_AUC_TOLERANCE = 1e-3


@dataclass
class TrainConfig:
    """What the training rule passes; mirrors the ``detectors.<name>`` config block."""

    arch: str
    model: dict = field(default_factory=dict)
    #: the detector's name in the config (``detectors.<name>``), for the errors that name it
    detector: str | None = None
    input_size: int | None = None
    train_methods: list[str] = field(default_factory=lambda: ["faceswap"])
    augment: str = "none"
    #: True: equal samples per group and label; {subjects, groups}: subjects per group
    balanced: bool | dict = False
    epochs: int = 5
    batch_size: int = 32
    lr: float = 2e-4
    weight_decay: float = 0.0
    num_workers: int = 0
    threads: int = 1
    device: str = "auto"
    seed: int = 0
    #: inference precision asked for; None: the architecture's own (``Detector.precision``)
    precision: str | None = None
    #: fakes made on the fly from the real faces (sbi, xray, fwa) or "none"; None: the
    #: architecture's own ``online_forgery`` (FWA's warps, Face X-ray's blends), else none
    online_forgery: str | None = None
    #: frames per training sequence of a video detector (``sequence_input``); None: the
    #: model's ``frames``
    frames_per_sequence: int | None = None
    # -- the start (fairforge.detectors.pretrained): a backbone file (or ``timm:<model>``), or
    # a whole checkpoint
    pretrained: str | None = None
    #: None (as the architecture's paper: ImageNet weights from ``pretrained``, or random),
    #: ``random`` (random weights, whatever the paper does) or ``checkpoint`` (fine-tune
    #: ``init_checkpoint``)
    init: str | None = None
    init_checkpoint: str | None = None
    init_format: str = "fairforge"
    # -- the rest of the recipe (fairforge.recipes.Recipe; these defaults change nothing)
    recipe: str | None = None
    optimizer: str = "adam"
    momentum: float = 0.9
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])
    sam: bool = False
    sam_rho: float = 0.05
    schedule: str = "constant"
    step_size: int = 10
    milestones: list[int] = field(default_factory=list)
    gamma: float = 0.1
    decay_start: float = 0.75
    warmup_epochs: int = 0
    patience: int | None = None
    frames_train: int | None = None
    frames_test: int | None = None
    augment_prob: float = 1.0
    augment_warmup: int = 0
    balanced_batches: bool = False


def training_frame(samples: pd.DataFrame, split: str, methods: list[str]) -> pd.DataFrame:
    """One split's real samples and fakes of ``methods``, in a fixed order. Sample ids are
    unique within a dataset only: a detector trained on several datasets (pooled) may see
    one id twice, so the dataset breaks the tie, whatever order the inputs came in."""
    keep = (samples["split"] == split) & samples["method"].isin([REAL, *methods])
    keys = [c for c in ("sample_id", "dataset") if c in samples.columns]
    return samples.loc[keep].sort_values(keys, kind="stable").reset_index(drop=True)


def balance_groups(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Subsample so every group has the same number of samples per label (FairFD Table 4)."""
    counts = frame.groupby(["group", "label"]).size()
    per_label = counts.groupby(level="label").min()
    keys = frame["sample_id"].map(lambda s: derive_seed(seed, "balance", s))
    ordered = frame.assign(_key=keys).sort_values("_key")
    parts = [g.head(int(per_label[lbl])) for (grp, lbl), g in ordered.groupby(["group", "label"])]
    return pd.concat(parts).drop(columns="_key").sort_values("sample_id").reset_index(drop=True)


def training_sets(samples: pd.DataFrame, cfg: TrainConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The training frame (balanced as ``cfg.balanced`` says) and the validation frame."""
    train = frames_per_video(
        training_frame(samples, "train", cfg.train_methods), cfg.frames_train, cfg.seed
    )
    if isinstance(cfg.balanced, dict):  # subjects per group (FairFD §5.3.1)
        train = balance_subjects(train, seed=cfg.seed, **cfg.balanced)
    elif cfg.balanced:
        train = balance_groups(train, cfg.seed)
    val = frames_per_video(
        training_frame(samples, "val", cfg.train_methods), cfg.frames_train, cfg.seed
    )
    if val.empty:
        raise ValueError(no_validation(samples, cfg))
    return train, val


def no_validation(samples: pd.DataFrame, cfg: TrainConfig) -> str:
    """Why a detector cannot train: its datasets give no validation samples, so the best
    epoch (by validation AUC) could not be told and only the first would ever be kept."""
    datasets = sorted(samples["dataset"].unique()) if "dataset" in samples.columns else []
    per_split = samples.groupby("split").size().to_dict() if "split" in samples.columns else {}
    return (
        f"{cfg.arch}: no validation samples of methods {['real', *cfg.train_methods]} in "
        f"dataset(s) {datasets} (samples per split: {per_split}); give each training "
        "dataset a val split in datasets.<name>.split: a val fraction, or split.val_from_train "
        "for an official or listed split, e.g. {official: true, val_from_train: 0.2}"
    )


def frames_per_video(frame: pd.DataFrame, frames: int | None, seed: int) -> pd.DataFrame:
    """At most ``frames`` rows per (video, method) of a video dataset, drawn by a seed
    derived from each sample id (image datasets, and ``frames=None``, pass unchanged)."""
    if not frames or "video_id" not in frame.columns or frame["video_id"].isna().all():
        return frame
    keys = frame["sample_id"].map(lambda s: derive_seed(seed, "frames", s))
    ordered = frame.assign(_key=keys).sort_values("_key")
    kept = ordered.groupby(["video_id", "method"], dropna=False, sort=False).head(frames)
    return kept.drop(columns="_key").sort_values("sample_id").reset_index(drop=True)


def online_method(cfg: TrainConfig, model=None) -> str | None:
    """The online forgery ``cfg`` trains on: its own, else its model's (Face X-ray's blends
    unless it learns its dataset's masks), else its architecture's, else None."""
    own = getattr(model if model is not None else DETECTORS.get(cfg.arch), "online_forgery", None)
    method = cfg.online_forgery or own
    return None if method in (None, "none") else method


def with_landmarks(frame: pd.DataFrame, root: str | Path) -> pd.DataFrame:
    """The rows of ``frame`` with their crop's 68 landmarks (column ``landmarks``), read from
    each dataset's faces manifest under ``root`` unless the frame has them; rows without
    landmarks are dropped, and counted in the log."""
    if "landmarks" not in frame.columns:
        lms = {}
        for dataset in frame["dataset"].unique():
            faces = read_manifest(
                result_path("faces", results=root, dataset=dataset),
                contract="faces",
                columns=["image_id", "ok", "landmarks"],
            )
            faces = faces[faces["ok"].astype(bool)]
            lms.update({(dataset, i): v for i, v in zip(faces["image_id"], faces["landmarks"])})
        keys = zip(frame["dataset"], frame["image_id"])
        frame = frame.assign(landmarks=[lms.get(k) for k in keys])
    missing = frame["landmarks"].isna()
    if missing.any():
        log.warning("%d of %d real faces have no landmarks: left out", missing.sum(), len(frame))
    return frame.loc[~missing].reset_index(drop=True)


def online_datasets(
    train: pd.DataFrame,
    val: pd.DataFrame,
    root: str | Path,
    method: str,
    cfg: TrainConfig,
    input_size: int,
    augment=None,
) -> tuple[OnlineForgeryDataset, OnlineForgeryDataset]:
    """Training and validation sets of the real faces of ``train`` and ``val`` and their
    fakes made by ``method`` on the fly: fresh each training epoch, the validation fakes
    fixed (epoch 0). The frames' offline fakes are not used."""
    entry = DETECTORS.get(cfg.arch)
    out = []
    for frame, aug in ((train, augment), (val, None)):
        real = with_landmarks(frame[frame["label"] == 0], root)
        if real.empty:
            raise ValueError(f"online {method} training of {cfg.arch} needs real faces")
        out.append(
            OnlineForgeryDataset(
                real,
                real["landmarks"],
                root,
                method,
                input_size,
                entry.mean,
                entry.std,
                augment=aug,
                seed=cfg.seed,
            )
        )
    return out[0], out[1]


def sequence_length(cfg: TrainConfig, model) -> int:
    """Frames per sequence of a video detector: the config's, else the model's ``frames``."""
    return int(cfg.frames_per_sequence or getattr(model, "frames", 1))


def _collate_device(batch: dict, device: torch.device) -> dict:
    return {
        k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()
    }


def _loader_kw(cfg: TrainConfig, device: torch.device) -> dict:
    return dict(
        batch_size=cfg.batch_size,
        num_workers=cfg.num_workers,
        pin_memory=device.type == "cuda",
        persistent_workers=cfg.num_workers > 0,
    )


def training_loader(
    dataset: FaceDataset | OnlineForgeryDataset | SequenceDataset,
    cfg: TrainConfig,
    device: torch.device,
) -> tuple[DataLoader, EpochSampler | BalancedBatchSampler]:
    """The shuffled training loader and its sampler; call ``sampler.set_epoch`` before each
    epoch. The epoch reaches (persistent) workers with each index, not as dataset state, so
    augmentation draws change every epoch and do not depend on ``num_workers``."""
    gen = torch.Generator().manual_seed(derive_seed(cfg.seed, "shuffle", cfg.arch))
    # The loader draws its workers' base seed from its own generator (persistent workers
    # draw it once, serial loading every epoch): sharing the shuffle's generator made the
    # order from the second epoch on depend on num_workers.
    worker_gen = torch.Generator().manual_seed(derive_seed(cfg.seed, "workers", cfg.arch))
    if cfg.balanced_batches:
        # online and sequence datasets label their own items (fakes made per real, videos)
        labels = getattr(dataset, "labels", None)
        labels = dataset.frame["label"].to_numpy() if labels is None else labels
        sampler = BalancedBatchSampler(labels, cfg.batch_size, derive_seed(cfg.seed, cfg.arch))
        kw = {k: v for k, v in _loader_kw(cfg, device).items() if k != "batch_size"}
        return DataLoader(dataset, batch_sampler=sampler, generator=worker_gen, **kw), sampler
    # With the batch of each key: SDAug draws its noise decision per batch, so batches must
    # not depend on the worker layout.
    sampler = EpochSampler(RandomSampler(dataset, generator=gen), batch_size=cfg.batch_size)
    loader = DataLoader(
        dataset, sampler=sampler, generator=worker_gen, drop_last=False, **_loader_kw(cfg, device)
    )
    return loader, sampler


def evaluate(model, loader, device, precision: str = "fp32") -> tuple[np.ndarray, float]:
    """Scores (probability of fake) in dataset order, and the mean loss."""
    model.eval()
    scores = np.zeros(len(loader.dataset), dtype=np.float32)
    losses = []
    with torch.inference_mode(), autocast(device, precision):
        for batch in loader:
            batch = _collate_device(batch, device)
            logits = model(batch["image"])
            losses.append(float(weighted_loss(model, logits, batch["label"], batch)[0]))
            scores[batch["index"].cpu().numpy()] = torch.sigmoid(logits.float()).cpu().numpy()
    return scores, float(np.mean(losses)) if losses else math.nan


def build_model(cfg: TrainConfig) -> tuple[torch.nn.Module, dict, int]:
    """The detector ``cfg`` describes, with its start applied (:func:`initialise`); returns
    (model, constructor kwargs, input size)."""
    torch.manual_seed(derive_seed(cfg.seed, "init", cfg.arch))
    entry = DETECTORS.get(cfg.arch)
    input_size = int(cfg.input_size or entry.default_input_size)
    model_kwargs = dict(cfg.model)
    if "input_size" in entry.__init__.__code__.co_varnames:
        model_kwargs.setdefault("input_size", input_size)
    if entry.needs_method_labels:  # real + one class per training method
        model_kwargs.setdefault("num_methods", len(cfg.train_methods) + 1)
    model = create_detector(cfg.arch, **model_kwargs)
    initialise(model, cfg)
    return model, model_kwargs, input_size


def initialise(model: torch.nn.Module, cfg: TrainConfig) -> None:
    """The start of training: the ``pretrained`` backbone weights (by the architecture's
    layout), then, with ``init: checkpoint``, the whole detector from ``init_checkpoint``
    (a fairforge or DeepfakeBench checkpoint) to fine-tune. A missing file names its path;
    a file that does not fit lists the unmatched keys. A detector whose paper starts from
    ImageNet weights that the config does not give stops here, unless ``init: random``
    (:func:`fairforge.detectors.pretrained.require_start`), and a frozen part never stays
    at random weights."""
    if cfg.init not in (None, "random", "checkpoint"):
        raise ValueError(f"{cfg.arch}: init must be random or checkpoint, got {cfg.init!r}")
    if cfg.init == "checkpoint" and not cfg.init_checkpoint:
        raise ValueError(f"{cfg.arch}: init: checkpoint needs a checkpoint path to start from")
    name = cfg.detector or cfg.arch
    fine_tune = cfg.init_checkpoint if cfg.init == "checkpoint" else None
    start = require_start(name, cfg.arch, cfg.init, cfg.pretrained, fine_tune)
    check_frozen_start(name, model, start)
    if cfg.pretrained:
        apply_pretrained(model, cfg.arch, cfg.pretrained)
    if cfg.init == "checkpoint":
        model.load_state_dict(init_state(model, cfg))
        log.info("%s: fine-tuning from %s (%s)", cfg.arch, cfg.init_checkpoint, cfg.init_format)


def init_state(model: torch.nn.Module, cfg: TrainConfig) -> dict:
    """The state dict of ``cfg.init_checkpoint`` in ``model``'s names, checked key by key."""
    path = cfg.init_checkpoint
    if cfg.init_format == "deepfakebench":
        state = read_state_dict(path, "DeepfakeBench checkpoint to fine-tune from")
        return map_deepfakebench_state(state, cfg.arch, model.state_dict())
    payload = read_checkpoint(path)
    if payload.get("arch") != cfg.arch:
        raise ValueError(
            f"{path} holds a {payload.get('arch')!r} detector, config says {cfg.arch!r}"
        )
    state, target = payload["state_dict"], model.state_dict()
    problems = [f"{k} (not in {cfg.arch})" for k in state if k not in target]
    problems += [f"{k} (not in the checkpoint)" for k in target if k not in state]
    problems += [
        f"{k} {tuple(state[k].shape)}≠{tuple(target[k].shape)}"
        for k in state
        if k in target and state[k].shape != target[k].shape
    ]
    if problems:
        shown = ", ".join(sorted(problems)[:12]) + (", ..." if len(problems) > 12 else "")
        raise CheckpointMismatch(
            f"checkpoint {path} does not fit {cfg.arch}: {len(problems)}: {shown}"
        )
    return state


def method_label_tensor(frame: pd.DataFrame, methods: list[str]) -> torch.Tensor:
    """Per row of ``frame``: 0 for real samples, ``i`` for the i-th of ``methods`` (1-based),
    the method-specific classes of detectors such as UCF."""
    index = {REAL: 0, **{m: i for i, m in enumerate(methods, start=1)}}
    return torch.tensor([index[m] for m in frame["method"]], dtype=torch.long)


def train_step(model, batch: dict, optimizer) -> tuple[float, dict[str, float]]:
    """One optimisation step on the detector's weighted losses (:func:`weighted_loss`);
    SAM's takes a second forward/backward pass at the perturbed weights (its closure).
    Returns the total loss and each term, unweighted, at the first pass."""
    parts = {}

    def closure():
        nonlocal parts
        optimizer.zero_grad(set_to_none=True)
        loss, terms = weighted_loss(model, model(batch["image"]), batch["label"], batch)
        loss.backward()
        parts = parts or {name: float(term.detach()) for name, term in terms.items()}
        return loss

    loss = closure()
    if isinstance(optimizer, SAM):
        optimizer.step(closure)
    else:
        optimizer.step()
    return float(loss.detach()), parts


def set_epoch_lr(optimizer, cfg: TrainConfig, epoch: int) -> float:
    """Set the learning rate of ``epoch`` by the recipe's schedule; returns it."""
    lr = epoch_lr(
        cfg.lr,
        epoch,
        cfg.epochs,
        cfg.schedule,
        cfg.warmup_epochs,
        step_size=cfg.step_size,
        milestones=cfg.milestones,
        gamma=cfg.gamma,
        decay_start=cfg.decay_start,
    )
    return set_lr(optimizer, lr)


def train_network(
    samples: pd.DataFrame, root: str | Path, cfg: TrainConfig, checkpoint_path: str | Path
) -> pd.DataFrame:
    """Train the network detector ``cfg.arch`` by its recipe and save the
    best-by-validation-AUC checkpoint; returns the log, one row per epoch (training stops
    early after ``cfg.patience`` epochs without a better validation AUC)."""
    torch.set_num_threads(max(1, cfg.threads))
    device = pick_device(cfg.device)
    entry = DETECTORS.get(cfg.arch)
    model, model_kwargs, input_size = build_model(cfg)
    model = model.to(device)

    online = online_method(cfg, model)
    maps = [] if online else supervision_columns(model)
    sets = zip(training_sets(samples, cfg), ("train", "val"))
    train, val = (mask_supervised(f, maps, f"{cfg.arch} ({split})") for f, split in sets)
    method_labels = method_label_tensor(train, cfg.train_methods)
    if train["label"].nunique() < 2 and not online:
        raise ValueError(
            f"training set for {cfg.arch} needs real and fake samples; "
            f"methods {cfg.train_methods} gave labels {sorted(train['label'].unique())}"
        )
    augment = None if cfg.augment == "none" else create_augment(cfg.augment)
    if online:
        train_ds, val_ds = online_datasets(train, val, root, online, cfg, input_size, augment)
        val_labels = val_ds.labels
    else:
        mask_column, xray_column = (maps + [None, None])[:2]
        train_ds = FaceDataset(
            train,
            root,
            input_size,
            entry.mean,
            entry.std,
            augment=augment,
            seed=cfg.seed,
            mask_column=mask_column,
            augment_prob=cfg.augment_prob,
            augment_warmup=cfg.augment_warmup,
            xray_column=xray_column,
        )
        val_ds = FaceDataset(
            val,
            root,
            input_size,
            entry.mean,
            entry.std,
            mask_column=mask_column,
            xray_column=xray_column,
        )
        val_labels = val["label"].to_numpy()
        if getattr(entry, "sequence_input", False):
            length = sequence_length(cfg, model)
            train_ds, val_ds = (
                SequenceDataset(ds, sequence_groups(ds.frame, length)) for ds in (train_ds, val_ds)
            )
            val_labels = val_ds.labels
    train_loader, sampler = training_loader(train_ds, cfg, device)
    val_loader = DataLoader(val_ds, shuffle=False, **_loader_kw(cfg, device))

    optimizer = make_optimizer(model.parameters(), asdict(cfg))

    def start(epoch):
        sampler.set_epoch(epoch.number)
        set_epoch_lr(optimizer, cfg, epoch.number)
        model.on_epoch_start(epoch.number, cfg.epochs)  # warm-ups and schedules inside it
        model.train()

    def step(epoch, index, batch):
        batch = _collate_device(batch, device)
        batch["seed"] = derive_seed(cfg.seed, "batch", cfg.arch, epoch.number, index)
        if entry.needs_method_labels:
            batch["method_label"] = method_labels[batch["index"].cpu()].to(device)
        return train_step(model, batch, optimizer)

    def validate(epoch):
        terms = {}
        for _, parts in epoch.outputs:
            if len(parts) > 1:  # auxiliary losses are logged unweighted, one column each
                for name, part in parts.items():
                    terms.setdefault(f"train_loss_{name}", []).append(part)
        scores, val_loss = evaluate(model, val_loader, device)
        val_auc = auc(val_labels, scores)
        epoch.row.update(
            epoch=epoch.number,
            train_loss=float(np.mean([loss for loss, _ in epoch.outputs])),
            val_loss=val_loss,
            val_auc=val_auc,
            n_train=len(train_ds),
            n_val=len(val_ds),
            seconds=time.perf_counter() - epoch.started,
            lr=optimizer.param_groups[0]["lr"],
            **{name: float(np.mean(values)) for name, values in terms.items()},
        )
        # NaN AUC (a one-class validation set) must still save a checkpoint: the first
        # epoch counts as the best whatever its score.
        return -math.inf if math.isnan(val_auc) else val_auc

    def save(epoch):
        val_auc = epoch.row["val_auc"]
        save_checkpoint(
            checkpoint_path, model, cfg, model_kwargs, input_size, epoch.number, val_auc
        )

    result = run_loop(
        range(1, cfg.epochs + 1),
        lambda epoch: train_loader,
        step,
        start=start,
        validate=validate,
        on_best=save,
        mode="max",
        keep_first=True,
        patience=cfg.patience,
        name=cfg.arch,
        watched="validation AUC",
    )
    settle_precision(checkpoint_path, val_loader, val_labels, cfg, device)
    return pd.DataFrame(result.rows)


def requested_precision(cfg: TrainConfig) -> str:
    """The precision ``cfg`` asks for: its own, else its architecture's default."""
    precision = cfg.precision or getattr(DETECTORS.get(cfg.arch), "precision", "fp32")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    return precision


def settle_precision(
    checkpoint_path, val_loader, labels: np.ndarray, cfg: TrainConfig, device
) -> str:
    """Record in the checkpoint the precision inference will use: bf16 only when asked
    for and it changes the best model's validation AUC by less than
    :data:`BF16_AUC_TOLERANCE` (else fp32, logged), with both AUCs."""
    precision = requested_precision(cfg)
    payload = read_checkpoint(checkpoint_path)
    if precision == "bf16":
        model, _ = load_checkpoint(checkpoint_path, device)
        fp32 = auc(labels, evaluate(model, val_loader, device, "fp32")[0])
        bf16 = auc(labels, evaluate(model, val_loader, device, "bf16")[0])
        payload.update(val_auc_fp32=float(fp32), val_auc_bf16=float(bf16))
        if not abs(bf16 - fp32) < BF16_AUC_TOLERANCE:  # NaN (one-class val) falls back too
            log.warning(
                "%s: bf16 changes the validation AUC from %.4f to %.4f (tolerance %g): "
                "inference runs in fp32",
                cfg.arch,
                fp32,
                bf16,
                BF16_AUC_TOLERANCE,
            )
            precision = "fp32"
        else:
            log.info("%s: bf16 validation AUC %.4f vs fp32 %.4f: bf16 kept", cfg.arch, bf16, fp32)
    payload["precision"] = precision
    write_checkpoint(checkpoint_path, payload)
    return precision


def save_checkpoint(
    path,
    model,
    cfg: TrainConfig,
    model_kwargs: dict,
    input_size: int,
    epoch: int,
    val_auc: float,
    precision: str = "fp32",
) -> None:
    """A fairforge checkpoint; ``precision`` is the one inference uses on a GPU (fp32 until
    :func:`settle_precision` has checked bf16 on the validation set)."""
    entry = type(model)
    payload = {
        "arch": cfg.arch,
        "model_config": model_kwargs,
        "train_config": asdict(cfg),
        "input_size": input_size,
        "mean": list(entry.mean),
        "std": list(entry.std),
        "epoch": epoch,
        "val_auc": float(val_auc),
        "precision": precision,
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
    }
    write_checkpoint(path, payload)


def import_checkpoint(
    source: str | Path, out: str | Path, cfg: TrainConfig, fmt: str = "fairforge"
) -> None:
    """Bring user-provided weights into the workflow as a fairforge checkpoint.

    ``fmt='deepfakebench'`` maps a DeepfakeBench state dict onto ``cfg.arch`` (an error lists
    unmatched keys); ``fairforge`` checkpoints are validated by rebuilding the model.
    """
    source = Path(source)
    if not source.is_file():
        raise FileNotFoundError(f"detector weights not found: expected a file at {source}")
    entry = DETECTORS.get(cfg.arch)
    input_size = int(cfg.input_size or entry.default_input_size)
    if fmt == "deepfakebench":
        kwargs = dict(cfg.model)
        if "input_size" in entry.__init__.__code__.co_varnames:
            kwargs.setdefault("input_size", input_size)
        model = load_deepfakebench(source, cfg.arch, **kwargs)
        if model.name != cfg.arch:  # e.g. DeepfakeBench's meso4 is fairforge's meso4_dfb
            raise ValueError(
                f"a DeepfakeBench {cfg.arch!r} checkpoint loads onto the {model.name!r} "
                f"detector: set arch: {model.name} for {source}"
            )
        save_checkpoint(out, model, cfg, kwargs, input_size, epoch=0, val_auc=math.nan)
        return
    model, meta = load_checkpoint(source)
    if meta["arch"] != cfg.arch:
        raise ValueError(f"{source} holds a {meta['arch']!r} detector, config says {cfg.arch!r}")
    save_checkpoint(
        out,
        model,
        cfg,
        meta["model_config"],
        meta["input_size"],
        epoch=int(meta.get("epoch", 0)),
        val_auc=float(meta.get("val_auc", math.nan)),
        precision=meta.get("precision", "fp32"),
    )
