"""MobileFaceNet (Chen et al. 2018), written out here: timm has none. The ``mobilefacenet``
backbone of the trainable encoders (:mod:`fairforge.encoders.trainable`)."""

from __future__ import annotations

from torch import nn

from fairforge.encoders.base import BACKBONES


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


@BACKBONES.register("mobilefacenet", family="mobilefacenet")
def build_mobilefacenet(
    name: str = "mobilefacenet", embedding_dim: int = 128, input_size: int = 112
) -> MobileFaceNet:
    return MobileFaceNet(embedding_dim, input_size)
