"""Face encoders trained here: an embedding network, loaded from the checkpoint its training
wrote.

Architectures, one registered encoder class each (registered with ``trainable=True``;
:func:`trainable_encoders` lists them). The Exposure paper's six, as FaceX-Zoo (which it
trained with) builds them where fairforge has that network: ``mobilefacenet`` (Chen et al.
2018, :mod:`fairforge.encoders.mobilefacenet`), ``resnet152`` (FaceX-Zoo's
face-recognition IR-SE-152, :mod:`fairforge.encoders.iresnet`; backbones ``ir50`` …
``ir_se152``), ``attentionnet`` (FaceX-Zoo's Residual Attention Network, Attention-56,
:mod:`fairforge.encoders.attentionnet`; backbones ``attention92`` and
``attention56_small``), and timm backbones built with
``pretrained=False``, the smallest variant of each family in timm 1.0: ``resnest`` →
resnest14d, ``repvgg`` → repvgg_a0, ``hrnet`` → hrnet_w18_small (HRNet fuses branches at
strides 4..32, so its input is 128 px, a multiple of 32; the others take 112 px); besides
them ``resnet`` → timm resnet10t. ``backbone=`` picks another network for a family: a name
on :data:`~fairforge.encoders.base.BACKBONES` (``mobilefacenet``, the IR-ResNets, the
attention networks), else any timm model.

:func:`fairforge.training.encoder.train_encoder` trains them, through a margin head
(:mod:`fairforge.encoders.heads`), by the Exposure paper's recipe. The checkpoint holds the
embedding network and a config of plain values, so ``torch.load(..., weights_only=True)``
rebuilds it; the classifier weights are not kept (they only matter for training).

Inputs are aligned crops, resized to the input size and normalised as insightface does,
(x − 127.5) / 127.5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from fairforge.checkpoints import read_state_dict
from fairforge.encoders.base import (
    BACKBONES,
    ENCODERS,
    EncoderError,
    FaceEncoder,
)


@dataclass(frozen=True)
class ArchSpec:
    backbone: str  # a name on BACKBONES, else a timm model
    input_size: int
    embedding_dim: int


class TimmEmbeddingNet(nn.Module):
    """A timm backbone (no classifier) then BN – dropout – linear – BN to the embedding."""

    def __init__(self, backbone: str, embedding_dim: int = 512, dropout: float = 0.0):
        super().__init__()
        import timm

        self.backbone = timm.create_model(backbone, pretrained=False, num_classes=0)
        features = self.backbone.num_features
        self.neck = nn.Sequential(
            nn.BatchNorm1d(features),
            nn.Dropout(dropout),
            nn.Linear(features, embedding_dim),
            nn.BatchNorm1d(embedding_dim),
        )

    def forward(self, x):
        return self.neck(self.backbone(x))


def trainable_encoders() -> list[str]:
    """Names of the registered encoders the ``train_encoder`` rule can train, asked of the
    registry each time so that one registered in any module counts."""
    return ENCODERS.names(trainable=True)


def arch_spec(arch: str) -> ArchSpec:
    if arch not in trainable_encoders():
        raise EncoderError(f"unknown encoder arch {arch!r}; known: {trainable_encoders()}")
    return ENCODERS.get(arch).spec


def build_embedding_net(
    arch: str,
    embedding_dim: int | None = None,
    backbone: str | None = None,
    input_size: int | None = None,
) -> tuple[nn.Module, dict]:
    """The embedding network of ``arch`` and the plain-value config that rebuilds it: its
    backbone built by :data:`~fairforge.encoders.base.BACKBONES`, or a timm model."""
    spec = arch_spec(arch)
    config = {
        "arch": arch,
        "backbone": backbone or spec.backbone,
        "embedding_dim": int(embedding_dim or spec.embedding_dim),
        "input_size": int(input_size or spec.input_size),
    }
    name, dim = config["backbone"], config["embedding_dim"]
    if name in BACKBONES:
        net: nn.Module = BACKBONES.create(name, name, dim, config["input_size"])
    else:
        net = TimmEmbeddingNet(name, dim)
    return net, config


def to_input_tensor(images: Sequence[np.ndarray], size: int) -> torch.Tensor:
    """uint8 RGB images -> uint8 NCHW tensor at ``size`` (normalised later, per batch)."""
    out = np.empty((len(images), size, size, 3), dtype=np.uint8)
    for i, img in enumerate(images):
        if img.shape[:2] != (size, size):
            interp = cv2.INTER_AREA if min(img.shape[:2]) > size else cv2.INTER_LINEAR
            img = cv2.resize(img, (size, size), interpolation=interp)
        out[i] = img
    return torch.from_numpy(out).permute(0, 3, 1, 2).contiguous()


def normalise_input(batch: torch.Tensor) -> torch.Tensor:
    return (batch.float() - 127.5) / 127.5


def load_encoder_checkpoint(path: str | Path) -> tuple[nn.Module, dict]:
    """Rebuild the embedding network of a checkpoint (``weights_only=True``), in eval mode."""
    path = Path(path)
    if not path.is_file():
        raise EncoderError(f"encoder checkpoint not found: {path}")
    payload = read_state_dict(path, "encoder checkpoint", containers=())
    config = payload["config"]
    net, _ = build_embedding_net(
        config["arch"], config["embedding_dim"], config["backbone"], config["input_size"]
    )
    try:
        net.load_state_dict(payload["state_dict"])
    except RuntimeError as err:
        raise EncoderError(
            f"{path}: its weights do not fit the {config['arch']} network "
            f"({config['backbone']}) built now; retrain it ({str(err).splitlines()[0]})"
        ) from None
    return net.eval(), config


class TrainableEncoder(FaceEncoder):
    """A trained embedding network from a checkpoint; each architecture is a subclass,
    registered under its name with its :class:`ArchSpec`."""

    spec: ArchSpec

    def __init__(
        self, checkpoint: str | Path | None = None, device: str | None = None, batch_size: int = 64
    ):
        if checkpoint is None:
            raise EncoderError(
                f"{self.arch}: give checkpoint=<path> written by train_encoder "
                "(an untrained encoder would rank at random)"
            )
        self.model, self.config = load_encoder_checkpoint(checkpoint)
        if self.config["arch"] != self.arch:
            raise EncoderError(
                f"{checkpoint} holds a {self.config['arch']!r} encoder, not {self.arch!r}"
            )
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model.to(self.device)
        self.dim = int(self.config["embedding_dim"])
        self.input_size = int(self.config["input_size"])
        self.batch_size = int(batch_size)

    @property
    def arch(self) -> str:
        return type(self).name

    @torch.no_grad()
    def _embed(self, images: list[np.ndarray]) -> np.ndarray:
        out = []
        for start in range(0, len(images), self.batch_size):
            x = to_input_tensor(images[start : start + self.batch_size], self.input_size)
            emb = self.model(normalise_input(x).to(self.device))
            out.append(F.normalize(emb, dim=1).cpu().numpy())
        return np.concatenate(out, axis=0)


@ENCODERS.register("mobilefacenet", trainable=True)
class MobileFaceNetEncoder(TrainableEncoder):
    """Trained MobileFaceNet (:mod:`fairforge.encoders.mobilefacenet`: timm has none)."""

    spec = ArchSpec("mobilefacenet", 112, 128)


@ENCODERS.register("resnet", trainable=True)
class ResNetEncoder(TrainableEncoder):
    """Trained timm resnet10t."""

    spec = ArchSpec("resnet10t", 112, 512)


@ENCODERS.register("resnet152", trainable=True)
class ResNet152Encoder(TrainableEncoder):
    """Trained face-recognition IR-SE-152 (the Exposure paper's ResNet152, FaceX-Zoo's;
    :mod:`fairforge.encoders.iresnet`), not the ImageNet ResNet-152."""

    spec = ArchSpec("ir_se152", 112, 512)


@ENCODERS.register("attentionnet", trainable=True)
class AttentionNetEncoder(TrainableEncoder):
    """Trained Residual Attention Network, Attention-56 as FaceX-Zoo builds it
    (:mod:`fairforge.encoders.attentionnet`; timm has none)."""

    spec = ArchSpec("attention56", 112, 512)


@ENCODERS.register("resnest", trainable=True)
class ResNeStEncoder(TrainableEncoder):
    """Trained timm resnest14d."""

    spec = ArchSpec("resnest14d", 112, 512)


@ENCODERS.register("repvgg", trainable=True)
class RepVGGEncoder(TrainableEncoder):
    """Trained timm repvgg_a0."""

    spec = ArchSpec("repvgg_a0", 112, 512)


@ENCODERS.register("hrnet", trainable=True)
class HRNetEncoder(TrainableEncoder):
    """Trained timm hrnet_w18_small; 128 px, a multiple of its stride 32."""

    spec = ArchSpec("hrnet_w18_small", 128, 512)
