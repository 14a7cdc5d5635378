"""Face encoders trained here: an embedding network, loaded from the checkpoint its training
wrote.

Architectures, one registered encoder class each (registered with ``trainable=True``;
:func:`~fairforge.encoders.base.trainable_encoders` lists them). The Exposure paper's six, as FaceX-Zoo (which it
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
(x − 127.5) / 127.5. The networks and that input handling are in
:mod:`fairforge.encoders.embedding_net` (torch), imported when an encoder is built: naming
and listing these encoders, as every plan's config check does, does not import torch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fairforge.encoders.base import ENCODERS, ArchSpec, EncoderError, FaceEncoder


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
        # torch comes with the network: naming these encoders (a config check) does not need it
        import torch

        from fairforge.encoders.embedding_net import load_encoder_checkpoint

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

    def _embed(self, images: list[np.ndarray]) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        from fairforge.encoders.embedding_net import normalise_input, to_input_tensor

        out = []
        with torch.no_grad():
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
