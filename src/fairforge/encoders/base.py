"""The encoder family: the :class:`FaceEncoder` interface, its registry and shared helpers.

Member modules import this module, never the package, so that the package can import them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from fairforge.registry import Registry

DEFAULT_ENCODER = "dlib_resnet"


def _check_encoder(name: str, cls: type, meta: dict) -> dict:
    """An encoder registration, ``@ENCODERS.register(name, **metadata)``: the class learns its
    name (unless it states its own)."""
    if not cls.__dict__.get("name"):
        cls.name = name
    return meta


ENCODERS: Registry = Registry("encoder", check=_check_encoder)

#: The embedding networks a trainable encoder can be built on, by name: each a function
#: ``(name, embedding_dim, input_size) -> nn.Module`` (any other name is a timm model,
#: :func:`fairforge.encoders.embedding_net.build_embedding_net`); metadata ``family``.
#: Their modules (torch) are deferred: a job that embeds with dlib, measures forgeries or
#: ranks embeddings does not pay torch's import (seconds per job).
BACKBONES: Registry = Registry(
    "encoder backbone",
    deferred=(
        "fairforge.encoders.mobilefacenet",
        "fairforge.encoders.iresnet",
        "fairforge.encoders.attentionnet",
    ),
)


class EncoderError(ValueError):
    """An encoder that cannot be built or run; the message names what is missing."""


@dataclass(frozen=True)
class ArchSpec:
    """A trainable encoder's network: the class attribute ``spec`` of its registration
    (:mod:`fairforge.encoders.trainable`)."""

    backbone: str  # a name on BACKBONES, else a timm model
    input_size: int
    embedding_dim: int


def trainable_encoders() -> list[str]:
    """Names of the registered encoders the ``train_encoder`` rule can train, asked of the
    registry each time so that one registered in any module counts."""
    return ENCODERS.names(trainable=True)


def arch_spec(arch: str) -> ArchSpec:
    if arch not in trainable_encoders():
        raise EncoderError(f"unknown encoder arch {arch!r}; known: {trainable_encoders()}")
    return ENCODERS.get(arch).spec


class FaceEncoder:
    """Base class: subclasses set ``dim`` and ``input_size`` and implement :meth:`_embed`."""

    name: str = ""
    dim: int = 0
    input_size: int = 112
    # Per embedded image, in order: whether it was aligned without a detected face (a
    # fallback). Kept by encoders that detect faces themselves; None for those that take
    # the crop as it is.
    fallbacks: list[bool] | None = None

    def embed(self, images: Sequence[np.ndarray] | np.ndarray) -> np.ndarray:
        """Embed uint8 RGB images (a list of HxWx3 arrays or one NxHxWx3 array)."""
        batch = as_image_list(images)
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.asarray(self._embed(batch), dtype=np.float32)
        if out.shape != (len(batch), self.dim):
            raise EncoderError(
                f"{self.name}: expected embeddings of shape "
                f"{(len(batch), self.dim)}, got {out.shape}"
            )
        return l2_normalise(out)

    def _embed(self, images: list[np.ndarray]) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, dim={self.dim}, "
            f"input_size={self.input_size})"
        )


def l2_normalise(x: np.ndarray, axis: int = -1, eps: float = 1e-12) -> np.ndarray:
    """Rows scaled to unit L2 norm; an all-zero row stays zero instead of becoming NaN."""
    x = np.asarray(x, dtype=np.float32)
    norm = np.linalg.norm(x, axis=axis, keepdims=True)
    return x / np.maximum(norm, eps)


def as_image_list(images: Sequence[np.ndarray] | np.ndarray) -> list[np.ndarray]:
    """Check every image is uint8 HxWx3 and return them as a list."""
    if isinstance(images, np.ndarray):
        if images.ndim == 3:
            raise EncoderError(
                "embed expects a batch (a list, or an NxHxWx3 array), got a single HxWx3 image"
            )
        images = list(images)
    out = []
    for i, img in enumerate(images):
        img = np.asarray(img)
        if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3 or min(img.shape[:2]) < 1:
            raise EncoderError(f"image {i}: expected uint8 RGB HxWx3, got {img.dtype} {img.shape}")
        out.append(np.ascontiguousarray(img))
    return out


def list_encoders(**where) -> list[str]:
    """Registered encoder names, optionally only those whose metadata matches ``where``."""
    return ENCODERS.names(**where)


def create_encoder(name: str = DEFAULT_ENCODER, **config) -> FaceEncoder:
    """Build a registered encoder; ``config`` holds its constructor arguments."""
    encoder = ENCODERS.create(name, **config)
    encoder.name = name
    return encoder


def embed_in_batches(
    encoder: FaceEncoder, images: Iterable[np.ndarray], batch_size: int = 64
) -> np.ndarray:
    """Embed an iterable of images ``batch_size`` at a time (bounded memory)."""
    chunks, batch = [], []
    for img in images:
        batch.append(img)
        if len(batch) == batch_size:
            chunks.append(encoder.embed(batch))
            batch = []
    if batch or not chunks:
        chunks.append(encoder.embed(batch))
    return np.concatenate(chunks, axis=0)
