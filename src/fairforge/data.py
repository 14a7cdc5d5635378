"""Torch datasets over manifests: decode, perturb or augment, resize, normalise.

Perturbations (test-time variants) and augmentations (training) are seeded per sample, from
``(sample_id, variant)`` and ``(seed, epoch, sample_id)``, so results do not depend on worker
count or batch order. The epoch travels with each index (:class:`EpochSampler` yields
``(epoch, index)``), never as dataset state: persistent worker processes hold a copy of the
dataset made before the first epoch, so an epoch set on the dataset would never reach them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import torch
from torch.utils.data import Dataset, Sampler

from fairforge.columns import XRAY_COLUMN
from fairforge.forgery import ONLINE_FORGERIES, as_landmarks, online_blend
from fairforge.forgery.shard import NEIGHBOURS
from fairforge.images import read_image, read_mask
from fairforge.seeding import rng_for
from fairforge.sources.split import even_positions

log = logging.getLogger(__name__)

#: The fakes a training set can make on the fly from its real faces (``online_forgery``).
#: A sample's manipulation mask (Face X-ray's map of it: XRAY_COLUMN).
MASK_COLUMN = "mask_path"


def supervision_columns(model) -> list[str]:
    """The maps a detector learns from besides the label: the manipulation mask where it
    ``needs_masks``, and Face X-ray's map as stored where it learns that map (``xray_maps``,
    :class:`~fairforge.detectors.face_xray.FaceXRay` with ``xray_supervision: difference``)."""
    columns = [MASK_COLUMN] if getattr(model, "needs_masks", False) else []
    return columns + ([XRAY_COLUMN] if columns and getattr(model, "xray_maps", False) else [])


def _has_file(values: pd.Series) -> np.ndarray:
    return np.array([isinstance(v, str) and v != "" for v in values], dtype=bool)


def mask_supervised(frame: pd.DataFrame, columns: Sequence[str], who: str = "") -> pd.DataFrame:
    """The rows of a training frame that a detector supervised by the maps ``columns``
    (:func:`supervision_columns`) can learn from: every real sample (its maps are empty) and
    every fake with each map. A fake without one (a dataset's fake with neither a released
    mask nor a source frame, :mod:`fairforge.video.fake_masks`) is left out, never given an
    empty map, and counted per method in the log."""
    if not columns:
        return frame
    missing = np.zeros(len(frame), dtype=bool)
    for column in columns:
        values = frame[column] if column in frame.columns else pd.Series(None, frame.index)
        missing |= ~_has_file(values)
    dropped = (frame["label"].to_numpy() == 1) & missing
    if dropped.any():
        counts = frame.loc[dropped, "method"].value_counts().sort_index()
        log.warning(
            "%s: %d fake(s) without %s left out of mask-supervised training (%s)",
            who or "training",
            int(dropped.sum()),
            " and ".join(columns),
            ", ".join(f"{method}: {n}" for method, n in counts.items()),
        )
    return frame.loc[~dropped].reset_index(drop=True)


def to_tensor(img: np.ndarray, size: int, mean, std) -> torch.Tensor:
    """uint8 RGB HxWx3 → normalised float CHW at ``size``×``size``."""
    if img.shape[0] != size or img.shape[1] != size:
        interp = cv2.INTER_AREA if img.shape[0] > size else cv2.INTER_LINEAR
        img = cv2.resize(img, (size, size), interpolation=interp)
    x = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1).float().div_(255.0)
    m = torch.tensor(mean, dtype=torch.float32).view(3, 1, 1)
    s = torch.tensor(std, dtype=torch.float32).view(3, 1, 1)
    return (x - m) / s


class FaceDataset(Dataset):
    """Samples of a manifest (``sample_id``, ``path``, ``label``), paths relative to ``root``.

    ``variant`` is a test-time condition (``clean`` or ``op@level``); ``augment`` a training
    transform called as ``augment(image, rng)``. ``mask_column`` adds the manipulation mask
    (zeros for real samples) for detectors that learn from it, ``xray_column`` Face X-ray's
    map of it as stored (``xray``, zeros for real samples); a fake without its map is an
    error (:func:`mask_supervised` leaves such fakes out).
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        root: str | Path,
        input_size: int,
        mean,
        std,
        variant: str = "clean",
        augment: Callable | None = None,
        seed: int = 0,
        mask_column: str | None = None,
        variant_options: dict | None = None,
        augment_prob: float = 1.0,
        augment_warmup: int = 0,
        xray_column: str | None = None,
    ):
        self.frame = frame.reset_index(drop=True)
        self.root = Path(root)
        self.input_size = int(input_size)
        self.mean, self.std = tuple(mean), tuple(std)
        self.variant = variant
        self.variant_options = variant_options or {}
        self.augment = augment
        self.augment_prob = float(augment_prob)
        self.augment_warmup = int(augment_warmup)
        self.seed = seed
        self.mask_column = mask_column
        self.xray_column = xray_column
        self._apply_variant = None
        if variant != "clean":
            from fairforge.perturb import apply_variant

            self._apply_variant = apply_variant

    def __len__(self) -> int:
        return len(self.frame)

    def __getitem__(self, key: int | tuple[int, int] | tuple[int, int, int]) -> dict:
        """Item ``key``: an index, ``(epoch, index)`` or ``(epoch, index, batch)`` from
        :class:`EpochSampler` (the augmentation of a sample depends on the epoch; a bare
        index is epoch 0). With the batch, an augmentation that decides per batch (SDAug's
        noise step) takes the batch's decision, drawn from ``(seed, epoch, batch)``, so every
        image of a batch shares it whatever the worker that loads it."""
        key = key if isinstance(key, tuple) else (0, key)
        epoch, index = key[0], key[1]
        row = self.frame.iloc[index]
        img = read_image(self.root / row["path"])
        if self._apply_variant is not None:
            img = self._apply_variant(img, self.variant, row["sample_id"], self.variant_options)
        maps = {
            name: self._read_mask(row, img.shape[:2], column)
            for name, column in (("mask", self.mask_column), ("xray", self.xray_column))
            if column
        }
        if self.augment is not None and epoch > self.augment_warmup:
            rng = rng_for(self.seed, "augment", epoch, row["sample_id"])
            if self.augment_prob >= 1.0 or rng.random() < self.augment_prob:
                img, maps = self._augment(img, maps, rng, key)
        item = {
            "image": to_tensor(img, self.input_size, self.mean, self.std),
            "label": torch.tensor(int(row["label"]), dtype=torch.long),
            "index": index,
        }
        for name, mask in maps.items():
            mask = cv2.resize(mask, (self.input_size,) * 2, interpolation=cv2.INTER_AREA)
            item[name] = torch.from_numpy(mask).float().div_(255.0).unsqueeze(0)
        return item

    def _augment(self, img, maps: dict, rng, key: tuple):
        """The augmentation of one image; a geometric one (flip, rotation: it has
        ``plan``/``apply``/``apply_geometry``) moves the maps (mask, X-ray) with the face, and
        one that decides per batch (SDAug's noise step) takes the decision of ``key``'s
        batch."""
        decide = getattr(self.augment, "batch_noise_fires", None)
        if len(key) == 3 and decide is not None:
            fires = decide(rng_for(self.seed, "augment_batch", key[0], key[2]))
            return self.augment(img, rng, fires), maps
        if not maps or not hasattr(self.augment, "apply_geometry"):
            return self.augment(img, rng), maps
        plan = self.augment.plan(rng)
        moved = {name: self.augment.apply_geometry(m, plan) for name, m in maps.items()}
        return self.augment.apply(img, plan), moved

    def _read_mask(self, row, shape, column: str) -> np.ndarray:
        """The map in ``column`` at the image's size (zeros for a real sample)."""
        rel = row.get(column)
        if isinstance(rel, str) and rel:
            mask = read_mask(self.root / rel)
            if mask.shape[:2] != tuple(shape):
                mask = cv2.resize(mask, (shape[1], shape[0]), interpolation=cv2.INTER_AREA)
            return mask
        if int(row["label"]) == 1:
            raise ValueError(
                f"sample {row['sample_id']}: a fake without {column}; mask-supervised "
                "training leaves such fakes out (fairforge.data.mask_supervised)"
            )
        return np.zeros(shape, dtype=np.uint8)


class EpochSampler(Sampler):
    """The indices of ``base`` (e.g. a ``RandomSampler``) as ``(epoch, index)`` pairs, or,
    given the loader's ``batch_size``, ``(epoch, index, batch)`` triples.

    The sampler runs in the main process, so :meth:`set_epoch` reaches every item even when
    the loader's workers are persistent: each worker receives the epoch with the index.
    """

    def __init__(self, base: Sampler, epoch: int = 0, batch_size: int | None = None):
        self.base = base
        self.epoch = epoch
        self.batch_size = batch_size

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.base)

    def __iter__(self):
        epoch, size = self.epoch, self.batch_size
        if size is None:
            return ((epoch, int(i)) for i in self.base)
        # the loader's batches are consecutive runs of ``batch_size`` keys: position // size
        return ((epoch, int(i), k // size) for k, i in enumerate(self.base))


class BalancedBatchSampler(Sampler):
    """Class-balanced batches of ``(epoch, index)``: each batch holds ``batch_size / 2``
    real and as many fake samples (Patch-Forensics' 16 + 16).

    Each class is drawn without replacement from a permutation per pass, seeded by
    ``(seed, epoch, label, pass)``; the smaller class starts a new pass when it runs out
    (it is oversampled). An epoch has as many batches as the larger class needs, so every
    sample of it is seen once per epoch. Use it as a loader's ``batch_sampler``.
    """

    def __init__(self, labels, batch_size: int, seed: int = 0, epoch: int = 0):
        if batch_size < 2 or batch_size % 2:
            raise ValueError(f"balanced batches need an even batch_size >= 2, got {batch_size}")
        labels = np.asarray(labels)
        self.by_label = [np.flatnonzero(labels == lbl) for lbl in (0, 1)]
        if any(len(idx) == 0 for idx in self.by_label):
            raise ValueError("balanced batches need both real (0) and fake (1) samples")
        self.half = batch_size // 2
        self.seed = seed
        self.epoch = epoch

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return -(-max(len(idx) for idx in self.by_label) // self.half)

    def _stream(self, label: int, count: int) -> np.ndarray:
        idx, out, n = self.by_label[label], [], 0
        while sum(len(o) for o in out) < count:
            rng = rng_for(self.seed, "balanced", self.epoch, label, n)
            out.append(idx[rng.permutation(len(idx))])
            n += 1
        return np.concatenate(out)[:count]

    def __iter__(self):
        epoch, n = self.epoch, len(self) * self.half
        real, fake = self._stream(0, n), self._stream(1, n)
        for b in range(len(self)):
            part = slice(b * self.half, (b + 1) * self.half)
            yield [(epoch, int(i)) for i in (*real[part], *fake[part])]


def online_fake(
    method: str,
    img: np.ndarray,
    lm: np.ndarray,
    seed: int,
    key: str,
    epoch: int,
    partner: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(real, fake, X-ray map) of one real face for one epoch, made by ``method``, a member
    of :data:`fairforge.forgery.ONLINE_FORGERIES` (``sbi``, ``xray``: blends; ``fwa``: a
    warp) seeded by :func:`fairforge.forgery.online_blend`. The map is uint8 (255 = 1), zero
    outside the blending boundary."""
    return online_blend(method, img, lm, seed, key, epoch, partner=partner)


def partner_pools(frame: pd.DataFrame, landmarks: np.ndarray, neighbours: int = NEIGHBOURS):
    """For each row, the indices of up to ``neighbours`` faces of other subjects nearest in
    landmarks (mean point distance; the crops are aligned), from the same group when it
    has another subject, else from all; Face X-ray blends one of them in, drawn per epoch."""
    subject = frame["subject_id"].astype(str).to_numpy()
    group = frame["group"].astype(str).to_numpy() if "group" in frame else np.zeros(len(frame))
    pools = []
    for k in range(len(frame)):
        cand = np.flatnonzero((group == group[k]) & (subject != subject[k]))
        if len(cand) == 0:
            cand = np.flatnonzero(subject != subject[k])
        if len(cand) == 0:
            raise ValueError(
                "online xray blending needs faces of at least two subjects; "
                f"the training set has only {subject[k]!r}"
            )
        dist = np.linalg.norm(landmarks[cand] - landmarks[k], axis=2).mean(1)
        pools.append(cand[np.lexsort((cand, dist))][:neighbours])
    return pools


class OnlineForgeryDataset(Dataset):
    """Real faces and fakes made from them on the fly, fresh each epoch (SBI, Face X-ray, FWA).

    ``frame`` holds the real samples (``sample_id``, ``path``, ``subject_id``, ``group``) and
    ``landmarks`` their 68 points in crop pixels. Items ``0 .. N-1`` are the reals, items
    ``N .. 2N-1`` the fake of each real for the epoch that travels with the index
    (:class:`EpochSampler`; a bare index is epoch 0): drawn from ``(seed, sample_id, epoch)``
    (:func:`online_fake`), so two epochs give different fakes, the same seed the same ones,
    whatever the worker count. Every item carries ``xray``, the (1, H, W) X-ray map in [0, 1]
    (zero for reals): the pixel target of Face X-ray's map. An SBI real is the background
    copy of its epoch's pair, as in the paper. ``augment`` is applied after the forgery and
    does not move the map: a geometric augmentation leaves ``xray`` unaligned.
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        landmarks,
        root: str | Path,
        method: str,
        input_size: int,
        mean,
        std,
        augment: Callable | None = None,
        seed: int = 0,
    ):
        ONLINE_FORGERIES.check(method)
        self.frame = frame.reset_index(drop=True)
        self.landmarks = np.stack([as_landmarks(v) for v in landmarks]) if len(frame) else None
        if len(self.frame) != (0 if self.landmarks is None else len(self.landmarks)):
            raise ValueError("one set of landmarks per real face is needed")
        self.root = Path(root)
        self.method = method
        self.input_size = int(input_size)
        self.mean, self.std = tuple(mean), tuple(std)
        self.augment = augment
        self.seed = seed
        self.pools = partner_pools(self.frame, self.landmarks) if method == "xray" else None

    @property
    def labels(self) -> np.ndarray:
        n = len(self.frame)
        return np.r_[np.zeros(n, np.int64), np.ones(n, np.int64)]

    def __len__(self) -> int:
        return 2 * len(self.frame)

    def _partner(self, k: int, key: str, epoch: int):
        if self.pools is None:
            return None
        pool = self.pools[k]
        j = int(pool[rng_for(self.seed, "online", "partner", key, epoch).integers(len(pool))])
        return read_image(self.root / self.frame.iloc[j]["path"]), self.landmarks[j]

    def __getitem__(self, key: int | tuple[int, ...]) -> dict:
        epoch, index = key[:2] if isinstance(key, tuple) else (0, key)
        n = len(self.frame)
        k, label = index % n, int(index >= n)
        row = self.frame.iloc[k]
        sid = str(row["sample_id"])
        img = read_image(self.root / row["path"])
        xray = np.zeros(img.shape[:2], np.uint8)
        if label or self.method == "sbi":
            partner = self._partner(k, sid, epoch)
            real, fake, fake_xray = online_fake(
                self.method, img, self.landmarks[k], self.seed, sid, epoch, partner
            )
            img, xray = (fake, fake_xray) if label else (real, xray)
        if self.augment is not None:
            img = self.augment(img, rng_for(self.seed, "augment", epoch, sid, label))
        size = self.input_size
        xray = cv2.resize(xray, (size, size), interpolation=cv2.INTER_AREA)
        return {
            "image": to_tensor(img, size, self.mean, self.std),
            "label": torch.tensor(label, dtype=torch.long),
            "index": index,
            "xray": torch.from_numpy(xray).float().div_(255.0).unsqueeze(0),
        }


def video_keys(frame: pd.DataFrame) -> pd.Series:
    """The video each sample belongs to: its ``video_id`` and ``method`` (a generated fake of
    a video frame keeps the real frame's ``video_id``), or the sample itself where the
    dataset has no videos (an image is a video of one frame)."""
    if "video_id" not in frame.columns:
        return frame["sample_id"].astype(str)
    video = frame["video_id"].astype(object)
    has_video = video.notna() & (video.astype(str) != "")
    method = frame["method"].astype(str) if "method" in frame.columns else ""
    key = "video:" + video.astype(str) + "/" + method
    return key.where(has_video, "sample:" + frame["sample_id"].astype(str))


def _rows_by_video(frame: pd.DataFrame) -> Iterator[np.ndarray]:
    """Row positions of each video of ``frame`` (:func:`video_keys`), in ``frame_index``
    order (then row order; no ``frame_index``: row order), videos in order of their first
    row."""
    keys = video_keys(frame).to_numpy()
    order = (
        frame["frame_index"].fillna(0).to_numpy()
        if "frame_index" in frame.columns
        else np.zeros(len(frame))
    )
    for _, rows in pd.Series(np.arange(len(frame))).groupby(keys, sort=False):
        rows = rows.to_numpy()
        yield rows[np.lexsort((rows, order[rows]))]


#: How the frames a test video is scored on are picked (:func:`frames_to_score`).
FRAME_PICKS = ("spaced", "first")


def frames_to_score(frame: pd.DataFrame, frames: int | None, pick: str = "spaced") -> pd.DataFrame:
    """The rows of ``frame`` a test protocol scores: at most ``frames`` frames of each video
    (:func:`video_keys`, in ``frame_index`` order), either ``spaced`` evenly over the video's
    frames, first and last included (as a video's frames are sampled,
    :func:`fairforge.sources.split.even_positions`; DeepfakeBench spreads a frame-level
    detector's test frames over the video too, from the first, at a whole-frame step), or the
    ``first`` ones (a consecutive clip, as DeepfakeBench tests a video-level detector). Rows
    keep their order; images (a video of one frame) and ``frames=None`` pass unchanged."""
    if pick not in FRAME_PICKS:
        raise ValueError(f"frames are picked {FRAME_PICKS}, got {pick!r}")
    if frames is None or frame.empty:
        return frame
    if frames < 1:
        raise ValueError(f"frames per test video must be at least 1, got {frames}")
    keep = np.zeros(len(frame), dtype=bool)
    for rows in _rows_by_video(frame):
        chosen = (
            range(min(frames, len(rows))) if pick == "first" else even_positions(len(rows), frames)
        )
        keep[rows[list(chosen)]] = True
    return frame.loc[keep]


def sequence_groups(frame: pd.DataFrame, length: int) -> list[np.ndarray]:
    """Row positions of ``frame`` grouped into sequences of ``length`` consecutive frames of
    one video (:func:`video_keys`, in ``frame_index`` order), videos in order of their first
    row; a video's last, short sequence (or a video shorter than ``length``) is padded by
    repeating its last frame. Every row is in exactly one sequence."""
    if length < 1:
        raise ValueError(f"frames_per_sequence must be at least 1, got {length}")
    groups = []
    for rows in _rows_by_video(frame):
        for start in range(0, len(rows), length):
            chunk = rows[start : start + length]
            groups.append(np.r_[chunk, np.repeat(chunk[-1], length - len(chunk))])
    return groups


class SequenceDataset(Dataset):
    """Frame sequences of ``frames`` (a :class:`FaceDataset`), for a video detector: item ``i``
    is ``groups[i]`` (:func:`sequence_groups`) as ``image`` (T, 3, H, W), the label of its
    video and ``index`` ``i``. Each frame is decoded, perturbed and augmented as in
    ``frames`` (augmentation draws are per frame, not shared by the sequence)."""

    def __init__(self, frames: FaceDataset, groups: list[np.ndarray]):
        self.frames = frames
        self.groups = groups
        labels = frames.frame["label"].to_numpy()
        self.labels = np.array([int(labels[g[0]]) for g in groups], dtype=np.int64)
        mixed = [i for i, g in enumerate(groups) if len(set(labels[g])) > 1]
        if mixed:
            raise ValueError(f"sequence {mixed[0]} mixes real and fake frames")

    def __len__(self) -> int:
        return len(self.groups)

    def __getitem__(self, key: int | tuple[int, ...]) -> dict:
        epoch, index = key[:2] if isinstance(key, tuple) else (0, key)
        images = [self.frames[(epoch, int(i))]["image"] for i in self.groups[index]]
        return {
            "image": torch.stack(images),
            "label": torch.tensor(int(self.labels[index]), dtype=torch.long),
            "index": index,
        }
