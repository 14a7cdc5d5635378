"""The embedding networks of the trainable encoders (torch): built by name from
:data:`~fairforge.encoders.base.BACKBONES` or timm, rebuilt from the checkpoint their training
wrote, and the input handling they share (resize, then (x − 127.5) / 127.5 as insightface
does). The registered encoders themselves live in :mod:`fairforge.encoders.trainable`, which
imports this module only when one is built, so that naming them (a config check, a plan)
does not import torch."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import torch
from torch import nn

from fairforge.checkpoints import read_state_dict
from fairforge.encoders.base import BACKBONES, EncoderError, arch_spec


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
