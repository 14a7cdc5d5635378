"""Face encoders trained here: a backbone, an embedding layer and an angular-margin head.

Architectures, one registered encoder class each (registered with ``trainable=True``;
:func:`trainable_encoders` lists them). The Exposure paper's six, as FaceX-Zoo (which it
trained with) builds them where fairforge has that network: ``mobilefacenet`` (Chen et al.
2018, written out below), ``resnet152`` (FaceX-Zoo's face-recognition IR-SE-152,
:mod:`fairforge.encoders.iresnet`; backbones ``ir50`` … ``ir_se152``), ``attentionnet``
(FaceX-Zoo's Residual Attention Network, Attention-56, :mod:`fairforge.encoders.attentionnet`;
backbones ``attention92`` and ``attention56_small``), and timm backbones built with
``pretrained=False``, the smallest variant of each family in timm 1.0: ``resnest`` →
resnest14d, ``repvgg`` → repvgg_a0, ``hrnet`` → hrnet_w18_small (HRNet fuses branches at
strides 4..32, so its input is 128 px, a multiple of 32; the others take 112 px); besides
them ``resnet`` → timm resnet10t. ``backbone=`` picks any other timm model for a family.

Training (:func:`train_encoder`) classifies the train-split identities through a margin head
on the normalised embedding: ``npcface`` (the paper's; NPCFace: hard negatives, those with
cos θ_j > cos(θ_y + m), are emphasised to t·cos θ_j + a, and the positive margin grows with
how hard they are, m_i = m0 + m1 · mean hard-negative cosine, applied where cos θ_y > 0;
m0=0.4, m1=0.2, t=1.1, a=0.2, as in the NPCFace authors' code) or ``arcface`` (additive
angular margin, s=64, m=0.5), with the paper's recipe (:data:`PAPER_RECIPE`: SGD, momentum
0.9, weight decay 1e-8, lr 0.1 decayed at epochs 5, 25 and 68, batch 64, early stopping
with patience 5 on held-out images). The checkpoint holds the embedding
network and a config of plain values, so ``torch.load(..., weights_only=True)`` rebuilds it;
the classifier weights are not kept (they only matter for training).

Inputs are aligned crops, resized to the input size and normalised as insightface does,
(x − 127.5) / 127.5.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from fairforge.encoders.attentionnet import ATTENTION_NETS, build_attentionnet
from fairforge.encoders.base import ENCODERS, EncoderError, FaceEncoder, register_encoder
from fairforge.encoders.crops import face_images, far_generator
from fairforge.encoders.iresnet import IR_NETS, build_iresnet
from fairforge.seeding import derive_seed


@dataclass(frozen=True)
class ArchSpec:
    backbone: str  # timm model name, or a native net: mobilefacenet, IR_NETS, ATTENTION_NETS
    input_size: int
    embedding_dim: int


# --------------------------------------------------------------------------- MobileFaceNet


class _ConvBN(nn.Sequential):
    def __init__(
        self,
        cin: int,
        cout: int,
        kernel: int = 1,
        stride: int = 1,
        groups: int = 1,
        act: bool = True,
        padding: int | None = None,
    ):
        padding = kernel // 2 if padding is None else padding
        layers: list[nn.Module] = [
            nn.Conv2d(cin, cout, kernel, stride, padding, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
        ]
        if act:
            layers.append(nn.PReLU(cout))
        super().__init__(*layers)


class _Bottleneck(nn.Module):
    """Inverted residual: expand 1×1, depthwise 3×3, linear project 1×1."""

    def __init__(self, cin: int, cout: int, stride: int, expansion: int):
        super().__init__()
        hidden = cin * expansion
        self.block = nn.Sequential(
            _ConvBN(cin, hidden),
            _ConvBN(hidden, hidden, 3, stride, groups=hidden),
            _ConvBN(hidden, cout, act=False),
        )
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        out = self.block(x)
        return x + out if self.residual else out


class MobileFaceNet(nn.Module):
    """MobileFaceNet: inverted residuals, then a global depthwise conv (GDC) over the
    final 7×7 map instead of average pooling, so the embedding keeps where features are."""

    # (expansion, channels, repeats, first stride)
    SETTINGS = ((2, 64, 5, 2), (4, 128, 1, 2), (2, 128, 6, 1), (4, 128, 1, 2), (2, 128, 2, 1))

    def __init__(self, embedding_dim: int = 128, input_size: int = 112):
        super().__init__()
        if input_size % 16:
            raise ValueError(f"MobileFaceNet needs an input size divisible by 16, got {input_size}")
        layers: list[nn.Module] = [_ConvBN(3, 64, 3, 2), _ConvBN(64, 64, 3, 1, groups=64)]
        cin = 64
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(_Bottleneck(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(_ConvBN(cin, 512))
        self.features = nn.Sequential(*layers)
        side = input_size // 16
        self.gdc = _ConvBN(512, 512, side, 1, groups=512, act=False, padding=0)
        self.project = nn.Sequential(
            nn.Conv2d(512, embedding_dim, 1, bias=False), nn.BatchNorm2d(embedding_dim)
        )
        self.num_features = embedding_dim

    def forward(self, x):
        return self.project(self.gdc(self.features(x))).flatten(1)


# --------------------------------------------------------------------------- timm


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
    """The embedding network of ``arch`` and the plain-value config that rebuilds it."""
    spec = arch_spec(arch)
    config = {
        "arch": arch,
        "backbone": backbone or spec.backbone,
        "embedding_dim": int(embedding_dim or spec.embedding_dim),
        "input_size": int(input_size or spec.input_size),
    }
    if config["backbone"] == "mobilefacenet":
        net: nn.Module = MobileFaceNet(config["embedding_dim"], config["input_size"])
    elif config["backbone"] in ATTENTION_NETS:
        net = build_attentionnet(config["backbone"], config["embedding_dim"], config["input_size"])
    elif config["backbone"] in IR_NETS:
        net = build_iresnet(config["backbone"], config["embedding_dim"], config["input_size"])
    else:
        net = TimmEmbeddingNet(config["backbone"], config["embedding_dim"])
    return net, config


# --------------------------------------------------------------------------- margin heads


class ArcFaceHead(nn.Module):
    """Additive angular margin: the target logit is s·cos(θ_y + m)."""

    def __init__(
        self, embedding_dim: int, n_classes: int, scale: float = 64.0, margin: float = 0.5
    ):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_classes, embedding_dim))
        nn.init.xavier_uniform_(self.weight)
        self.scale = float(scale)
        self.margin = float(margin)

    def cosines(self, emb: torch.Tensor) -> torch.Tensor:
        return F.linear(F.normalize(emb), F.normalize(self.weight)).clamp(-1.0, 1.0)

    @staticmethod
    def _add_margin(cos_y: torch.Tensor, margin: torch.Tensor | float) -> torch.Tensor:
        margin = torch.as_tensor(margin, dtype=cos_y.dtype, device=cos_y.device)
        sin_y = torch.sqrt((1.0 - cos_y * cos_y).clamp_min(1e-7))
        shifted = cos_y * torch.cos(margin) - sin_y * torch.sin(margin)
        # Past θ_y = π − m, cos(θ_y + m) would rise again; keep it decreasing in θ_y
        # (insightface's fallback) so the margin never rewards a worse angle.
        return torch.where(
            cos_y > torch.cos(math.pi - margin), shifted, cos_y - margin * torch.sin(margin)
        )

    def forward(self, emb: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        cos = self.cosines(emb)
        target = cos.gather(1, labels[:, None])
        logits = cos.scatter(1, labels[:, None], self._add_margin(target, self.margin))
        return logits * self.scale


class NPCFaceHead(ArcFaceHead):
    """NPCFace: hard negatives emphasised, and a positive margin that grows with them."""

    def __init__(
        self,
        embedding_dim: int,
        n_classes: int,
        scale: float = 64.0,
        margin: float = 0.5,
        m0: float = 0.4,
        m1: float = 0.2,
        t: float = 1.1,
        a: float = 0.2,
    ):
        super().__init__(embedding_dim, n_classes, scale, margin)
        self.m0, self.m1, self.t, self.a = float(m0), float(m1), float(t), float(a)

    @staticmethod
    def _plain_margin(cos_y: torch.Tensor, margin: torch.Tensor | float) -> torch.Tensor:
        margin = torch.as_tensor(margin, dtype=cos_y.dtype, device=cos_y.device)
        sin_y = torch.sqrt((1.0 - cos_y * cos_y).clamp_min(1e-7))
        return cos_y * torch.cos(margin) - sin_y * torch.sin(margin)

    def forward(self, emb: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        # As the NPCFace authors' code (FaceX-Zoo): a negative is hard when cos θ_j exceeds
        # cos(θ_y + m); the positive gets cos(θ_y + m_i) only where cos θ_y > 0, and keeps
        # cos θ_y elsewhere.
        cos = self.cosines(emb)
        target = cos.gather(1, labels[:, None])
        is_target = torch.zeros_like(cos, dtype=torch.bool).scatter(1, labels[:, None], True)
        hard = (cos > self._plain_margin(target, self.margin)) & ~is_target
        with torch.no_grad():
            n_hard = hard.sum(1, keepdim=True)
            mean_hard = (cos * hard).sum(1, keepdim=True) / n_hard.clamp_min(1)
            margin_i = self.m0 + self.m1 * mean_hard
        positive = torch.where(target > 0, self._plain_margin(target, margin_i), target)
        negatives = torch.where(hard, self.t * cos + self.a, cos)
        logits = negatives.scatter(1, labels[:, None], positive)
        return logits * self.scale


MARGIN_HEADS = {"arcface": ArcFaceHead, "npcface": NPCFaceHead}


# --------------------------------------------------------------------------- training


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


@dataclass
class TrainedEncoder:
    model: nn.Module
    config: dict
    classes: list[str]
    losses: list[float] = field(default_factory=list)  # one per optimisation step

    def loss_table(self) -> pd.DataFrame:
        return pd.DataFrame({"step": range(1, len(self.losses) + 1), "loss": self.losses})

    def summary(self) -> str:
        first, last = (self.losses[0], self.losses[-1]) if self.losses else (np.nan, np.nan)
        return (
            f"{self.config['arch']}: {self.config['n_classes']} identities, "
            f"{len(self.losses)} steps, loss {first:.3f} -> {last:.3f}"
        )


#: The Exposure paper's recipe: SGD, momentum 0.9, weight decay 1e-8, lr 0.1 divided by 10
#: at epochs 5, 25 and 68, batch 64, early stopping with patience 5.
PAPER_RECIPE = {
    "optimizer": "sgd",
    "lr": 0.1,
    "momentum": 0.9,
    "weight_decay": 1e-8,
    "milestones": (5, 25, 68),
    "lr_decay": 0.1,
    "batch_size": 64,
    "patience": 5,
}
OPTIMIZERS = ("sgd", "adam")


def _held_out(labels: torch.Tensor, fraction: float, gen: torch.Generator) -> torch.Tensor:
    """A boolean mask of the images held out for early stopping: ``floor(fraction · n)`` of
    each identity's n images (none of an identity with fewer than 1/fraction)."""
    held = torch.zeros(len(labels), dtype=torch.bool)
    if fraction <= 0:
        return held
    for c in torch.unique(labels):
        idx = torch.nonzero(labels == c).flatten()
        n = int(math.floor(fraction * len(idx)))
        if n and len(idx) - n >= 1:
            held[idx[torch.randperm(len(idx), generator=gen)[:n]]] = True
    return held


def train_encoder(
    images: Sequence[np.ndarray],
    identity_labels: Sequence,
    arch: str = "mobilefacenet",
    epochs: int = 100,
    out_path: str | Path | None = None,
    *,
    head: str = "npcface",
    scale: float = 64.0,
    margin: float = 0.5,
    embedding_dim: int | None = None,
    backbone: str | None = None,
    input_size: int | None = None,
    batch_size: int = PAPER_RECIPE["batch_size"],
    optimizer: str = PAPER_RECIPE["optimizer"],
    lr: float = PAPER_RECIPE["lr"],
    momentum: float = PAPER_RECIPE["momentum"],
    weight_decay: float = PAPER_RECIPE["weight_decay"],
    milestones: Sequence[int] = PAPER_RECIPE["milestones"],
    lr_decay: float = PAPER_RECIPE["lr_decay"],
    patience: int | None = PAPER_RECIPE["patience"],
    val_fraction: float = 0.1,
    hflip: bool = True,
    max_steps: int | None = None,
    seed: int = 0,
    device: str | torch.device | None = None,
) -> TrainedEncoder:
    """Train an embedding network to tell ``identity_labels`` apart through a margin head.

    By default the Exposure paper's recipe (:data:`PAPER_RECIPE`) with its NPCFace head:
    SGD (momentum 0.9, weight decay 1e-8), lr 0.1 multiplied by ``lr_decay`` at each epoch
    of ``milestones``; ``optimizer="adam"`` uses Adam (no momentum, no schedule unless
    milestones are given). Shuffled batches, random horizontal flips.

    Early stopping: ``val_fraction`` of each identity's images (seeded) are held out and
    their margin-head loss is measured after every epoch; training stops when it has not
    improved for ``patience`` epochs and the best epoch's weights are kept (with no image
    held out, the epoch's mean training loss is watched instead; ``patience=None`` never
    stops early). ``max_steps`` stops after that many steps (tests). With ``out_path`` the
    checkpoint is written there.
    """
    if len(images) != len(identity_labels):
        raise ValueError(f"{len(images)} images but {len(identity_labels)} labels")
    if head not in MARGIN_HEADS:
        raise EncoderError(f"unknown margin head {head!r}; known: {sorted(MARGIN_HEADS)}")
    if optimizer not in OPTIMIZERS:
        raise EncoderError(f"unknown optimizer {optimizer!r}; known: {list(OPTIMIZERS)}")
    classes = sorted({str(x) for x in identity_labels})
    if len(classes) < 2:
        raise ValueError("training an identity classifier needs at least two identities")
    index = {c: i for i, c in enumerate(classes)}
    labels = torch.tensor([index[str(x)] for x in identity_labels], dtype=torch.long)
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "encoder_init", arch))
        net, config = build_embedding_net(arch, embedding_dim, backbone, input_size)
        margin_head = MARGIN_HEADS[head](config["embedding_dim"], len(classes), scale, margin)
    config.update(
        head=head,
        scale=float(scale),
        margin=float(margin),
        epochs=int(epochs),
        seed=int(seed),
        n_classes=len(classes),
        optimizer=optimizer,
        lr=float(lr),
    )
    data = to_input_tensor(images, config["input_size"])
    held = _held_out(labels, val_fraction, torch.Generator().manual_seed(derive_seed(seed, "val")))
    train_idx, val_idx = torch.nonzero(~held).flatten(), torch.nonzero(held).flatten()
    net.to(device).train()
    margin_head.to(device).train()
    params = list(net.parameters()) + list(margin_head.parameters())
    if optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    else:
        opt = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.MultiStepLR(opt, list(milestones), gamma=lr_decay)
    gen = torch.Generator().manual_seed(derive_seed(seed, "encoder_shuffle", arch))
    # BatchNorm cannot train on a batch of one; drop a last batch of one.
    losses: list[float] = []
    step, best, best_epoch, best_state = 0, math.inf, -1, None
    for epoch in range(int(epochs)):
        order = train_idx[torch.randperm(len(train_idx), generator=gen)]
        flips = torch.rand(len(data), generator=gen) < 0.5
        epoch_losses = []
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            if len(idx) < 2:
                continue
            x = normalise_input(data[idx])
            if hflip:
                x = torch.where(flips[idx, None, None, None], x.flip(-1), x)
            logits = margin_head(net(x.to(device)), labels[idx].to(device))
            loss = F.cross_entropy(logits, labels[idx].to(device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            epoch_losses.append(losses[-1])
            step += 1
            if max_steps is not None and step >= max_steps:
                break
        schedule.step()
        if max_steps is not None and step >= max_steps:
            break
        if patience is None:
            continue
        watched = (
            _held_out_loss(net, margin_head, data[val_idx], labels[val_idx], device)
            if len(val_idx)
            else float(np.mean(epoch_losses))
            if epoch_losses
            else math.inf
        )
        if watched < best:
            best, best_epoch = watched, epoch
            best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
        elif epoch - best_epoch >= patience:
            break
    if best_state is not None:
        net.load_state_dict(best_state)
    config.update(best_epoch=int(best_epoch + 1), epochs_run=int(epoch + 1) if epochs else 0)
    net.eval()
    result = TrainedEncoder(net.cpu(), config, classes, losses)
    if out_path is not None:
        save_encoder_checkpoint(result, out_path)
    return result


@torch.no_grad()
def _held_out_loss(net, margin_head, data, labels, device, batch_size: int = 256) -> float:
    net.eval()
    total = 0.0
    for start in range(0, len(data), batch_size):
        x = normalise_input(data[start : start + batch_size]).to(device)
        y = labels[start : start + batch_size].to(device)
        total += float(F.cross_entropy(margin_head(net(x), y), y, reduction="sum"))
    net.train()
    return total / max(1, len(data))


def train_encoder_on_faces(
    faces: pd.DataFrame,
    results_dir: str | Path,
    arch: str,
    out_path: str | Path,
    split: str | None = "train",
    *,
    far: bool = False,
    distance: int = 3,
    face_fraction: float = 1.0,
    degradation: str = "classical",
    generator: str | Path | None = None,
    seed: int = 0,
    **train_kwargs,
) -> TrainedEncoder:
    """:func:`train_encoder` on the usable crops (``ok``, ``crop_path`` relative to
    ``results_dir``) of the faces-table rows of ``split`` (all rows when None), labelled by
    ``subject_id``, in image-id order.

    ``far``: train on the crops seen far away (the Exposure paper's far-trained encoders),
    degraded exactly as the ranking degrades probes (:func:`~fairforge.encoders.crops.far_view`,
    same seeds): by ``degradation`` ``classical``, the far chain at ``distance``
    (``face_fraction`` is the share of the crop width the face spans), or ``learned``, the
    near-to-far generator of checkpoint ``generator``.
    """
    rows = faces
    if "ok" in rows.columns:
        rows = rows[rows["ok"].astype(bool)]
    if split is not None:
        rows = rows[rows["split"] == split]
    rows = rows[rows["crop_path"].notna()].sort_values("image_id", kind="stable")
    if rows.empty:
        raise ValueError(f"no usable face crops in split {split!r} to train an encoder on")
    gen = far_generator(degradation, generator) if far else None
    input_size = train_kwargs.get("input_size") or arch_spec(arch).input_size
    images = list(
        face_images(rows, results_dir, far, distance, seed, input_size, face_fraction, gen)
    )
    return train_encoder(
        images,
        rows["subject_id"].astype(str).tolist(),
        arch,
        out_path=out_path,
        seed=seed,
        **train_kwargs,
    )


def save_encoder_checkpoint(trained: TrainedEncoder, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "state_dict": {k: v.detach().cpu() for k, v in trained.model.state_dict().items()},
        "config": dict(trained.config),
        "classes": list(trained.classes),
        "losses": [float(x) for x in trained.losses],
    }
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)


def load_encoder_checkpoint(path: str | Path) -> tuple[nn.Module, dict]:
    """Rebuild the embedding network of a checkpoint (``weights_only=True``), in eval mode."""
    path = Path(path)
    if not path.is_file():
        raise EncoderError(f"encoder checkpoint not found: {path}")
    payload = torch.load(path, map_location="cpu", weights_only=True)
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


@register_encoder("mobilefacenet", trainable=True)
class MobileFaceNetEncoder(TrainableEncoder):
    """Trained MobileFaceNet (written out above: timm has none)."""

    spec = ArchSpec("mobilefacenet", 112, 128)


@register_encoder("resnet", trainable=True)
class ResNetEncoder(TrainableEncoder):
    """Trained timm resnet10t."""

    spec = ArchSpec("resnet10t", 112, 512)


@register_encoder("resnet152", trainable=True)
class ResNet152Encoder(TrainableEncoder):
    """Trained face-recognition IR-SE-152 (the Exposure paper's ResNet152, FaceX-Zoo's;
    :mod:`fairforge.encoders.iresnet`), not the ImageNet ResNet-152."""

    spec = ArchSpec("ir_se152", 112, 512)


@register_encoder("attentionnet", trainable=True)
class AttentionNetEncoder(TrainableEncoder):
    """Trained Residual Attention Network, Attention-56 as FaceX-Zoo builds it
    (:mod:`fairforge.encoders.attentionnet`; timm has none)."""

    spec = ArchSpec("attention56", 112, 512)


@register_encoder("resnest", trainable=True)
class ResNeStEncoder(TrainableEncoder):
    """Trained timm resnest14d."""

    spec = ArchSpec("resnest14d", 112, 512)


@register_encoder("repvgg", trainable=True)
class RepVGGEncoder(TrainableEncoder):
    """Trained timm repvgg_a0."""

    spec = ArchSpec("repvgg_a0", 112, 512)


@register_encoder("hrnet", trainable=True)
class HRNetEncoder(TrainableEncoder):
    """Trained timm hrnet_w18_small; 128 px, a multiple of its stride 32."""

    spec = ArchSpec("hrnet_w18_small", 128, 512)
