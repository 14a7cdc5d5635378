"""Learned near-to-far degradation: the Exposure paper's near-to-far generator, trained
jointly with a far-to-near restorer (Bulat et al. 2018 style).

The generator G maps a 64x64 close-range face and a noise vector to a 16x16 far face
through residual blocks; the restorer R maps a 16x16 face back to 64x64. They are trained
together on two unpaired folders (close-range faces X, far faces Y):

- G against a critic on 16x16 faces that compares G(x) with real far faces y (hinge GAN
  loss), plus an MSE term to the 4x average-pooled input that keeps content and colour;
- R against a critic on 64x64 faces that compares the restored R(G(x)) with the original
  close-range x (hinge GAN loss), plus the restoration loss |R(G(x)) - x| (L1), which also
  trains G to keep what R needs;
- a cycle on the far side, |G(R(y)) - y| (L1), for real far faces.

``restorer=False`` in :class:`fairforge.training.degradation.HighToLowConfig` trains G alone
(the former behaviour). :func:`fairforge.training.degradation.train_high_to_low` trains them
and writes a checkpoint (state dicts and the config, loadable with
``torch.load(..., weights_only=True)``) and a PNG sample sheet (docs/perturbations.md
section 5); this module holds the networks and applies the trained ones.
"""

from __future__ import annotations

import functools
from pathlib import Path

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import spectral_norm

from fairforge.images import IMAGE_SUFFIXES, ImageError, read_image
from fairforge.perturb.base import OperationUnavailable, check_image
from fairforge.seeding import rng_for

HIGH_SIZE = 64
LOW_SIZE = 16


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(channels, channels, 3, padding=1),
        )

    def forward(self, x):
        return x + self.body(x)


def _stage(channels: int, blocks: int) -> nn.Sequential:
    return nn.Sequential(*[ResidualBlock(channels) for _ in range(blocks)])


class HighToLowGenerator(nn.Module):
    """(N,3,64,64) in [-1, 1] and (N, noise_dim) noise -> (N,3,16,16) in [-1, 1].

    The noise enters as a fourth input channel (a learned 64x64 map), so the same face can
    degrade differently.
    """

    def __init__(self, channels: int = 32, noise_dim: int = 64, blocks_per_stage: int = 1):
        super().__init__()
        self.noise_dim = noise_dim
        self.noise_map = nn.Linear(noise_dim, HIGH_SIZE * HIGH_SIZE)
        self.head = nn.Conv2d(4, channels, 3, padding=1)
        self.stage64 = _stage(channels, blocks_per_stage)
        self.stage32 = _stage(channels, blocks_per_stage)
        self.stage16 = _stage(channels, 2 * blocks_per_stage)
        self.tail = nn.Conv2d(channels, 3, 3, padding=1)

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        noise = self.noise_map(z).view(-1, 1, HIGH_SIZE, HIGH_SIZE)
        h = self.stage64(self.head(torch.cat([x, noise], dim=1)))
        h = self.stage32(F.avg_pool2d(h, 2))
        h = self.stage16(F.avg_pool2d(h, 2))
        return torch.tanh(self.tail(F.leaky_relu(h, 0.2)))


class LowResDiscriminator(nn.Module):
    """Spectral-normalised critic on 16x16 faces (hinge loss)."""

    def __init__(self, channels: int = 32):
        super().__init__()
        c = channels
        self.features = nn.Sequential(
            spectral_norm(nn.Conv2d(3, c, 3, padding=1)),
            nn.LeakyReLU(0.2),
            spectral_norm(nn.Conv2d(c, 2 * c, 4, stride=2, padding=1)),
            nn.LeakyReLU(0.2),
            spectral_norm(nn.Conv2d(2 * c, 4 * c, 4, stride=2, padding=1)),
            nn.LeakyReLU(0.2),
        )
        self.score = spectral_norm(nn.Linear(4 * c * 4 * 4, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.score(self.features(x).flatten(1)).squeeze(1)


class LowToHighRestorer(nn.Module):
    """The far-to-near restorer: (N,3,16,16) in [-1, 1] -> (N,3,64,64) in [-1, 1], residual
    blocks at 16 px, then two x2 stages (bilinear upsampling and convolution)."""

    def __init__(self, channels: int = 32, blocks_per_stage: int = 1):
        super().__init__()
        self.head = nn.Conv2d(3, channels, 3, padding=1)
        self.stage16 = _stage(channels, 2 * blocks_per_stage)
        self.stage32 = _stage(channels, blocks_per_stage)
        self.stage64 = _stage(channels, blocks_per_stage)
        self.tail = nn.Conv2d(channels, 3, 3, padding=1)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        h = self.stage16(self.head(y))
        h = self.stage32(F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False))
        h = self.stage64(F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False))
        # the bilinear upsampling of the input carries colour; the network adds detail
        base = F.interpolate(y, size=HIGH_SIZE, mode="bilinear", align_corners=False)
        return torch.tanh(base + self.tail(F.leaky_relu(h, 0.2)))


class HighResDiscriminator(nn.Module):
    """Spectral-normalised critic on 64x64 faces: restored against original close-range."""

    def __init__(self, channels: int = 32):
        super().__init__()
        c = channels
        layers: list[nn.Module] = [spectral_norm(nn.Conv2d(3, c, 3, padding=1)), nn.LeakyReLU(0.2)]
        for k in range(4):  # 64 -> 4
            cin, cout = c * min(2**k, 4), c * min(2 ** (k + 1), 4)
            layers += [
                spectral_norm(nn.Conv2d(cin, cout, 4, stride=2, padding=1)),
                nn.LeakyReLU(0.2),
            ]
        self.features = nn.Sequential(*layers)
        self.score = spectral_norm(nn.Linear(4 * c * 4 * 4, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.score(self.features(x).flatten(1)).squeeze(1)


# --- data -----------------------------------------------------------------------------------


def _image_paths(folder: str | Path) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"image folder not found: {folder}")
    paths = sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
    if not paths:
        raise ValueError(f"no images ({', '.join(IMAGE_SUFFIXES)}) under {folder}")
    return paths


def load_faces(folder: str | Path, size: int) -> np.ndarray:
    """All readable images of a folder as an (N, size, size, 3) uint8 array."""
    faces = []
    for path in _image_paths(folder):
        try:
            image = read_image(path)
        except ImageError:
            continue  # an unreadable file is not a training face; the rest still are
        faces.append(cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA))
    if not faces:
        raise ValueError(f"no readable images under {folder}")
    return np.stack(faces)


def to_tensor(images: np.ndarray, device: torch.device) -> torch.Tensor:
    """uint8 (N, H, W, 3) faces as an (N, 3, H, W) float tensor in [-1, 1] on ``device``."""
    x = torch.from_numpy(np.ascontiguousarray(images)).to(device)
    return x.permute(0, 3, 1, 2).float() / 127.5 - 1.0


def _to_images(x: torch.Tensor) -> np.ndarray:
    out = ((x.detach().clamp(-1, 1) + 1.0) * 127.5).round().to(torch.uint8)
    return out.permute(0, 2, 3, 1).cpu().numpy()


def _resolve_device(device: str | None) -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


@torch.no_grad()
def sample_sheet_image(
    gen: HighToLowGenerator, high: np.ndarray, low: np.ndarray, seed: int = 0
) -> np.ndarray:
    """Rows: high-res inputs, their 4x average pools, generated low-res, real low-res (the
    sheet :func:`fairforge.training.degradation.train_high_to_low` writes).

    Low-res tiles are shown at 64 px with nearest neighbour so their pixels stay visible.
    """
    dev = next(gen.parameters()).device
    x = to_tensor(high, dev)
    rng = rng_for("high_to_low", seed, "sheet")
    z = torch.from_numpy(rng.standard_normal((len(high), gen.noise_dim), dtype=np.float32)).to(dev)
    rows = [high, _to_images(F.avg_pool2d(x, 4)), _to_images(gen(x, z)), low]
    width = max(len(r) for r in rows)

    def tile_row(images: np.ndarray) -> np.ndarray:
        tiles = [
            cv2.resize(im, (HIGH_SIZE, HIGH_SIZE), interpolation=cv2.INTER_NEAREST) for im in images
        ]
        tiles += [np.zeros((HIGH_SIZE, HIGH_SIZE, 3), np.uint8)] * (width - len(tiles))
        return np.concatenate(tiles, axis=1)

    return np.concatenate([tile_row(r) for r in rows], axis=0)


# --- loading and applying -------------------------------------------------------------------


def load_generator(path: str | Path, device: str | None = "cpu") -> HighToLowGenerator:
    """The generator of a checkpoint written by
    :func:`fairforge.training.degradation.train_high_to_low`."""
    path = Path(path)
    if not path.is_file():
        raise OperationUnavailable(
            f"high-to-low generator checkpoint not found at {path} (train it with "
            "train_high_to_low, or set the path of an existing checkpoint)",
            path,
        )
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or "generator" not in payload or "config" not in payload:
        raise ValueError(f"{path} is not a high-to-low generator checkpoint")
    cfg = payload["config"]
    gen = HighToLowGenerator(cfg["channels"], cfg["noise_dim"], cfg["blocks_per_stage"])
    gen.load_state_dict(payload["generator"])
    return gen.to(_resolve_device(device)).eval()


def load_restorer(path: str | Path, device: str | None = "cpu") -> LowToHighRestorer:
    """The far-to-near restorer of a checkpoint trained with ``restorer=True``."""
    path = Path(path)
    if not path.is_file():
        raise OperationUnavailable(f"near-to-far checkpoint not found at {path}", path)
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or "restorer" not in payload:
        raise ValueError(f"{path} holds no far-to-near restorer (trained with restorer=False?)")
    cfg = payload["config"]
    res = LowToHighRestorer(cfg["channels"], cfg["blocks_per_stage"])
    res.load_state_dict(payload["restorer"])
    return res.to(_resolve_device(device)).eval()


@torch.no_grad()
def restore(res: LowToHighRestorer, image: np.ndarray) -> np.ndarray:
    """A far face (any size, resized to 16x16) restored to 64x64 by the restorer."""
    check_image(image, "restore input")
    dev = next(res.parameters()).device
    low = cv2.resize(image, (LOW_SIZE, LOW_SIZE), interpolation=cv2.INTER_AREA)
    return _to_images(res(to_tensor(low[None], dev)))[0]


@torch.no_grad()
def apply_generator(
    gen: HighToLowGenerator,
    image: np.ndarray,
    rng: np.random.Generator,
    out_size: int | tuple[int, int] | None = None,
) -> np.ndarray:
    """Degrade one uint8 RGB face: resize to 64x64, generate 16x16, optionally upsample.

    ``out_size``: ``None`` returns the 16x16 result, an int a square of that side, a pair
    (width, height) that size (bicubic, like the classical chain's final step).
    """
    check_image(image, "apply_generator input")
    dev = next(gen.parameters()).device
    high = cv2.resize(image, (HIGH_SIZE, HIGH_SIZE), interpolation=cv2.INTER_AREA)
    z = torch.from_numpy(rng.standard_normal((1, gen.noise_dim), dtype=np.float32)).to(dev)
    low = _to_images(gen(to_tensor(high[None], dev), z))[0]
    if out_size is None:
        return low
    size = (out_size, out_size) if isinstance(out_size, int) else tuple(map(int, out_size))
    return cv2.resize(low, size, interpolation=cv2.INTER_CUBIC)


@functools.lru_cache(maxsize=4)
def _cached_generator(path: str, mtime: float, device: str) -> HighToLowGenerator:
    return load_generator(path, device)


def cached_generator(path: str | Path, device: str = "cpu") -> HighToLowGenerator:
    """:func:`load_generator`, loaded once per file version (for per-image application)."""
    path = Path(path)
    if not path.is_file():
        return load_generator(path, device)  # raises with the expected path
    return _cached_generator(str(path), path.stat().st_mtime, device)
