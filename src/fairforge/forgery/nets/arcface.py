"""SimSwap's identity encoder: the ArcFace IR-SE ResNet of ``arcface_checkpoint.tar``
(neuralchen/SimSwap release 1.0; the network of foamliu/InsightFace-v2 that SimSwap trained
with, ``models/arcface_models.py``), in the checkpoint's names.

A 3×3 stem without padding (112 → 110 px), max pooling, four stages of improved residual
blocks (BatchNorm before the first convolution, one PReLU shared by both activations,
squeeze-and-excitation after the second BatchNorm), BatchNorm, dropout, a fully connected
layer from the 7×7×512 map and a last BatchNorm: a 512-d embedding, which SimSwap
L2-normalises into the identity latent.

The release is a whole pickled model, which fairforge does not unpickle at run time
(``weights_only=True`` only). :func:`convert_release` turns it once into a state dict without
the authors' code: it reads the file with torch's weights-only unpickler, admitting only
torch's own layers and plain stand-ins for the authors' three classes, and checks every layer's
settings (kernel, stride, padding, bias...) against the network here before writing its
weights (``python -m fairforge convert-release simswap-arcface IN OUT``).
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from torch import nn

from fairforge.checkpoints import CheckpointMismatch, listing, load_exact

# Blocks per stage when a state dict does not say (foamliu's ResNet-101: SimSwap's choice of
# backbone is not documented; the count is read from the weights).
DEFAULT_LAYERS = (3, 4, 23, 3)


def conv3x3(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False)


class SEBlock(nn.Module):
    def __init__(self, channel: int, reduction: int = 16):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(
            nn.Linear(channel, channel // reduction),
            nn.PReLU(),
            nn.Linear(channel // reduction, channel),
            nn.Sigmoid(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c = x.shape[:2]
        return x * self.fc(self.avg_pool(x).view(b, c)).view(b, c, 1, 1)


class IRBlock(nn.Module):
    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None, use_se=True):
        super().__init__()
        self.bn0 = nn.BatchNorm2d(inplanes)
        self.conv1 = conv3x3(inplanes, inplanes)
        self.bn1 = nn.BatchNorm2d(inplanes)
        self.prelu = nn.PReLU()
        self.conv2 = conv3x3(inplanes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.use_se = use_se
        if use_se:
            self.se = SEBlock(planes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.prelu(self.bn1(self.conv1(self.bn0(x))))
        out = self.bn2(self.conv2(out))
        if self.use_se:
            out = self.se(out)
        residual = x if self.downsample is None else self.downsample(x)
        return self.prelu(out + residual)


class SimSwapArcFace(nn.Module):
    """``forward(x)``: ``(B, 3, 112, 112)`` RGB normalised by ImageNet's mean and std → the
    ``(B, 512)`` embedding (not normalised)."""

    def __init__(self, layers=DEFAULT_LAYERS, use_se: bool = True):
        super().__init__()
        self.inplanes, self.use_se = 64, use_se
        self.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.prelu = nn.PReLU()
        self.maxpool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.layer1 = self._stage(64, layers[0])
        self.layer2 = self._stage(128, layers[1], stride=2)
        self.layer3 = self._stage(256, layers[2], stride=2)
        self.layer4 = self._stage(512, layers[3], stride=2)
        self.bn2 = nn.BatchNorm2d(512)
        self.dropout = nn.Dropout()
        self.fc = nn.Linear(512 * 7 * 7, 512)
        self.bn3 = nn.BatchNorm1d(512)

    def _stage(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes),
            )
        stage = [IRBlock(self.inplanes, planes, stride, downsample, use_se=self.use_se)]
        self.inplanes = planes
        stage += [IRBlock(planes, planes, use_se=self.use_se) for _ in range(1, blocks)]
        return nn.Sequential(*stage)

    @classmethod
    def for_state(cls, state: dict) -> SimSwapArcFace:
        """The network a state dict's keys describe: blocks per stage, squeeze-excitation."""
        counts = []
        for stage in range(1, 5):
            found = {
                int(m.group(1)) for k in state if (m := re.match(rf"layer{stage}\.(\d+)\.", k))
            }
            counts.append(len(found))
        if not all(counts):
            return cls()  # keys of another network: load_exact lists what is missing
        return cls(tuple(counts), use_se=any(".se." in k for k in state))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.prelu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = self.dropout(self.bn2(x))
        return self.bn3(self.fc(x.view(x.size(0), -1)))


# --------------------------------------------------------------------------- conversion

# The authors' classes in the pickle, read as plain containers of their layers.
AUTHOR_CLASSES = (
    "models.arcface_models.ResNet",
    "models.arcface_models.IRBlock",
    "models.arcface_models.SEBlock",
    "torch.nn.parallel.data_parallel.DataParallel",
)
TORCH_LAYERS = (
    nn.Conv2d,
    nn.BatchNorm2d,
    nn.BatchNorm1d,
    nn.PReLU,
    nn.MaxPool2d,
    nn.AdaptiveAvgPool2d,
    nn.Linear,
    nn.Sequential,
    nn.Sigmoid,
    nn.Dropout,
    nn.ReLU,
)


class _Pickled(nn.Module):
    """A stand-in for one of the authors' classes: its layers, no code."""


def convert_release(src: str | Path, dst: str | Path) -> dict:
    """Write the state dict of SimSwap's pickled ``arcface_checkpoint.tar`` (``src``) to
    ``dst`` (a ``weights_only`` file); returns a summary. Raises :class:`CheckpointMismatch`
    when the file holds anything but the expected layers, or layers set differently."""
    src, dst = Path(src), Path(dst)
    if not src.is_file():
        raise FileNotFoundError(f"SimSwap ArcFace release not found: expected a file at {src}")
    allowed = [*TORCH_LAYERS, *((_Pickled, name) for name in AUTHOR_CLASSES)]
    try:
        with torch.serialization.safe_globals(allowed):
            model = torch.load(src, map_location="cpu", weights_only=True)
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointMismatch(
            f"{src} is not SimSwap's pickled ArcFace model ({first}); where SimSwap's code is "
            "importable, torch.save(torch.load(IN).state_dict(), OUT) converts it"
        ) from None
    if not isinstance(model, nn.Module):
        raise CheckpointMismatch(f"{src} holds a {type(model).__name__}, not a pickled model")
    if isinstance(model, _Pickled) and "module" in model._modules and len(model._modules) == 1:
        model = model.module  # a DataParallel wrapper
    state = model.state_dict()
    net = SimSwapArcFace.for_state(state)
    ours = dict(net.named_modules())
    wrong = [
        f"{name}: {layer!r}≠{ours.get(name)!r}"
        for name, layer in model.named_modules()
        if not isinstance(layer, (_Pickled, nn.Sequential)) and repr(layer) != repr(ours.get(name))
    ]
    if wrong:
        raise CheckpointMismatch(
            f"{src}: layers set unlike SimSwap's ArcFace ({listing(wrong, 6)})"
        )
    load_exact(net, state, f"SimSwap ArcFace in {src}")  # every key and shape, both ways
    dst.parent.mkdir(parents=True, exist_ok=True)
    torch.save({k: v.clone() for k, v in state.items()}, dst)
    blocks = [len(getattr(net, f"layer{i}")) for i in range(1, 5)]
    return {"tensors": len(state), "blocks": blocks, "out": str(dst)}
