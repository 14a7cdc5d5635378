"""The bi-layer neural avatar (Zakharov et al., "Fast Bi-layer Neural Synthesis of One-Shot
Realistic Head Avatars", ECCV 2020), as released in saic-violet/bilayer-model.

Five networks, one released file each (``<epoch>_<name>.pth``), with the release's module
and parameter names (the release saves them with spectral normalisation on every Conv2d and
Linear; :func:`fold_spectral_norm` turns ``weight_orig``/``weight_u``/``weight_v`` into the
weight the release computes when it removes the normalisation for inference):

- :class:`IdentityEmbedder` (``identity_embedder``): the source image (masked to the person)
  and its stickman -> six 8x8 identity embeddings;
- :class:`PoseEmbedder` (``keypoints_embedder``): 68 keypoints in [-1, 1] -> a 256x4x4 tensor;
- :class:`TextureGenerator` (``texture_generator``): the embeddings -> the high-frequency
  texture (3x256x256), its normalisations (SPADE-style, per-pixel) and skip convolutions
  predicted from the embeddings by a projector;
- :class:`InferenceGenerator` (``inference_generator``): a pose tensor -> the warp field
  (UVs) of the texture, the low-frequency image and the segmentation logits, its adaptive
  batch norms and skip convolutions predicted from the embeddings;
- :class:`TextureEnhancer` (``texture_enhancer``): the texture and the gradient of the
  source's reconstruction error with respect to it -> a texture update (four unrolled steps).

The sizes are the release's arguments (:class:`BilayerConfig`, read from its ``args.txt``;
the defaults are the released model's: 256 px, embedder 64-512 channels down to 8x8,
generators from 4x4, texture 64-512 channels with ``ada_spade_bn``, inference 32-256
channels with ``ada_bn`` and efficient upsampling, a 256-wide keypoints MLP, enhancer 64-128
channels with a 128x128 bottleneck, 8 blocks and 4 unrolled steps, eps 1e-7). The layer types
are the released ones (adaptive 1x1 skip convolutions, nearest upsampling, average-pool
downsampling, LeakyReLU(0.2)); other values of the arguments that choose them are refused by
the method that reads ``args.txt``.

The adaptive parameters are handed to the generators' modules in the order the modules are
visited, as the release does; the projectors' ``first``/``skip``/``second`` groups fall onto
the blocks shifted by the first block's non-adaptive first norm, which is how the released
networks were trained.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class BilayerConfig:
    """The sizes the release reads from its ``args.txt``; the defaults are the released
    model's (its training scripts)."""

    image_size: int = 256
    eps: float = 1e-7
    emb_num_channels: int = 64
    emb_max_channels: int = 512
    emb_output_tensor_size: int = 8
    tex_num_channels: int = 64
    tex_max_channels: int = 512
    tex_input_tensor_size: int = 4
    inf_num_channels: int = 32
    inf_max_channels: int = 256
    inf_input_tensor_size: int = 4
    pse_num_channels: int = 256
    pse_num_blocks: int = 4
    enh_num_channels: int = 64
    enh_max_channels: int = 128
    enh_bottleneck_tensor_size: int = 128
    enh_num_blocks: int = 8
    enh_unrolling_depth: int = 4

    @classmethod
    def from_args(cls, args: dict) -> BilayerConfig:
        """The sizes in a parsed ``args.txt`` (absent keys keep the released values)."""
        values = {}
        for f in fields(cls):
            if f.name in args:
                values[f.name] = type(f.default)(args[f.name])
        return cls(**values)


def leaky() -> nn.Module:
    return nn.LeakyReLU(0.2)


def fold_spectral_norm(state: dict) -> dict:
    """A state dict saved with ``torch.nn.utils.spectral_norm`` (dim 0) -> plain weights:
    ``weight = weight_orig / (u . (W v))``, W the weight as a matrix, as
    ``remove_spectral_norm`` computes it without a power iteration. Keys without all three
    parts stay as they are (a mismatch the loader then lists)."""
    out = dict(state)
    for key in [k for k in state if k.endswith("weight_orig")]:
        stem = key[: -len("weight_orig")]
        if stem + "weight_u" not in state or stem + "weight_v" not in state:
            continue
        orig, u, v = out.pop(key), out.pop(stem + "weight_u"), out.pop(stem + "weight_v")
        sigma = torch.dot(u, torch.mv(orig.reshape(orig.shape[0], -1), v))
        out[stem + "weight"] = orig / sigma
    return out


# --------------------------------------------------------------------------- adaptive layers


class AdaptiveConv2d(nn.Module):
    """A 1x1 convolution whose weight (B, out, in, 1, 1) and bias (B, out) are set per sample
    by a projector before each forward (``weight``/``bias`` attributes)."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.weight = self.bias = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.weight, self.bias
        if weight.shape[0] != x.shape[0]:  # several frames per identity
            t = x.shape[0] // weight.shape[0]
            weight = weight.repeat_interleave(t, 0)
            bias = bias.repeat_interleave(t, 0)
        b, c, h, w = x.shape
        kernel = weight[:, :, :, 0, 0].transpose(1, 2)
        out = torch.bmm(x.view(b, c, -1).transpose(1, 2), kernel).transpose(1, 2)
        return out.reshape(b, -1, h, w) + bias[..., None, None]


class AdaptiveNorm2d(nn.Module):
    """Batch norm without its own affine: the scale and shift come per sample from a
    projector (``ada_bn``) or, with ``spade``, per pixel from learned pixel features through
    two adaptive 1x1 convolutions (``ada_spade_bn``)."""

    def __init__(self, num_features: int, spatial_size: int, spade: bool, eps: float):
        super().__init__()
        self.spade = spade
        if spade:
            self.pixel_feats = nn.Parameter(
                torch.empty(1, num_features, spatial_size, spatial_size)
            )
            self.conv_weight = AdaptiveConv2d(num_features, num_features)
            self.conv_bias = AdaptiveConv2d(num_features, num_features)
        self.norm_layer = nn.BatchNorm2d(num_features, eps=eps, affine=False)
        self.weight = self.bias = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.norm_layer(x)
        if self.spade:
            feats = torch.cat([self.pixel_feats] * self.conv_weight.weight.shape[0])
            weight, bias = self.conv_weight(feats) + 1.0, self.conv_bias(feats)
        else:
            weight, bias = self.weight[..., None, None], self.bias[..., None, None]
        if weight.shape[0] != out.shape[0]:
            b = weight.shape[0]
            out = out.view(b, -1, *out.shape[1:]) * weight[:, None] + bias[:, None]
            return out.view(-1, *out.shape[2:])
        return out * weight + bias


def assign_adaptive(net: nn.Module, weights: list, biases: list, norms: bool) -> None:
    """Hand the projector's parameters to ``net``'s adaptive modules in visiting order (the
    release's ``assign_adaptive_params``); ``norms=False`` leaves SPADE norms, whose own
    convolutions take the parameters, out."""
    i = 0
    for m in net.modules():
        if isinstance(m, AdaptiveNorm2d) and norms and not m.spade:
            m.weight, m.bias = weights[i] + 1.0, biases[i]
            i += 1
        elif isinstance(m, AdaptiveConv2d):
            m.weight, m.bias = weights[i], biases[i]
            i += 1
    if i != len(weights):
        raise ValueError(f"{len(weights)} adaptive parameter sets for {i} adaptive modules")


# --------------------------------------------------------------------------- residual block


class ResBlock(nn.Module):
    """The release's pre-activation residual block, for the options its networks use.

    ``norm``: ``none``, ``ada_bn`` or ``ada_spade_bn`` (the first norm a plain affine batch
    norm when ``first_plain``); ``resize``: ``none``, ``down`` (2x2 average pool after the
    second convolution) or ``up`` (nearest 2x before the first convolution, or before the
    second with ``efficient``); ``adaptive_skip``: the 1x1 skip convolution is adaptive.
    The submodules sit where the release's ``nn.Sequential`` puts them (their indices are
    the checkpoint's keys)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        eps: float,
        norm: str = "none",
        resize: str = "none",
        spatial_size: int = 1,
        adaptive_skip: bool = False,
        efficient: bool = False,
        first_plain: bool = False,
        return_feats: bool = False,
    ):
        super().__init__()
        self.return_feats = return_feats
        up, down = resize == "up", resize == "down"
        spade = norm == "ada_spade_bn"

        def norm_layer(channels, size, plain=False):
            if plain:
                return nn.BatchNorm2d(channels, eps, affine=True)
            return AdaptiveNorm2d(channels, size, spade, eps)

        def upsample():
            return nn.Upsample(scale_factor=2, mode="nearest")

        layers: list[nn.Module] = []
        if norm != "none":
            layers.append(norm_layer(in_channels, spatial_size, first_plain))
        layers.append(leaky())
        if up and not efficient:
            layers.append(upsample())
            if spatial_size != 1:
                spatial_size *= 2
        layers.append(nn.Conv2d(in_channels, out_channels, 3, padding=1))
        if norm != "none":
            layers.append(norm_layer(out_channels, spatial_size))
        layers.append(leaky())
        self.block_feats = nn.Sequential(*layers)

        layers = [upsample()] if up and efficient else []
        layers.append(nn.Conv2d(out_channels, out_channels, 3, padding=1))
        if down:
            layers.append(nn.AvgPool2d(2))
        self.block = nn.Sequential(*layers)

        if in_channels != out_channels or up or down:
            skip = AdaptiveConv2d(in_channels, out_channels) if adaptive_skip else None
            layers = [upsample()] if up else []
            layers.append(skip or nn.Conv2d(in_channels, out_channels, 1))
            if down:
                layers.append(nn.AvgPool2d(2))
            self.skip = nn.Sequential(*layers)
        else:
            self.skip = nn.Identity()

    def forward(self, x: torch.Tensor):
        feats = self.block_feats(x)
        out = self.block(feats) + self.skip(x)
        return (out, feats) if self.return_feats else out


def _channels(base: int, top: int, i: int) -> int:
    return min(int(base * 2**i), top)


# --------------------------------------------------------------------------- the five networks


class Embedder(nn.Module):
    def __init__(self, cfg: BilayerConfig):
        super().__init__()
        enc_blocks = int(math.log2(cfg.image_size // cfg.emb_output_tensor_size))
        dec_blocks = int(math.log2(cfg.image_size // cfg.tex_input_tensor_size))
        out = cfg.emb_num_channels
        layers: list[nn.Module] = [nn.Conv2d(6, out, 3, 1, 1)]
        for i in range(1, enc_blocks + 1):
            channels = _channels(cfg.emb_num_channels, cfg.emb_max_channels, i)
            layers.append(ResBlock(out, channels, cfg.eps, resize="down"))
            out = channels
        self.enc = nn.Sequential(*layers)
        self.dec_blocks = nn.ModuleList()
        for i in range(dec_blocks - 1, -1, -1):
            channels = _channels(cfg.tex_num_channels, cfg.tex_max_channels, i)
            self.dec_blocks.append(ResBlock(out, channels, cfg.eps, return_feats=True))
            out = channels

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        out = self.enc(x)
        embeds = []
        for block in self.dec_blocks:
            out, feats = block(out)
            embeds.append(feats)
        return embeds


class IdentityEmbedder(nn.Module):
    """``identity_embedder``: (B, 6, S, S) masked source image and stickman in [-1, 1] -> the
    identity embeddings, one per generator block (released: (B, C, 8, 8), C = 512, 512,
    512, 256, 128, 64)."""

    def __init__(self, cfg: BilayerConfig):
        super().__init__()
        self.net = Embedder(cfg)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return self.net(x)


class PoseMLP(nn.Module):
    def __init__(self, cfg: BilayerConfig):
        super().__init__()
        self.channels, self.size = cfg.inf_max_channels, cfg.inf_input_tensor_size
        hidden = cfg.pse_num_channels
        layers: list[nn.Module] = [nn.Linear(136, hidden)]
        for _ in range(1, cfg.pse_num_blocks - 1):
            layers += [leaky(), nn.Linear(hidden, hidden)]
        layers += [leaky(), nn.Linear(hidden, self.channels * self.size**2)]
        self.mlp = nn.Sequential(*layers)

    def forward(self, poses: torch.Tensor) -> torch.Tensor:
        return self.mlp(poses).view(-1, self.channels, self.size, self.size)


class PoseEmbedder(nn.Module):
    """``keypoints_embedder``: (B, 136) keypoints in [-1, 1] -> (B, 256, 4, 4) released."""

    def __init__(self, cfg: BilayerConfig):
        super().__init__()
        self.net = PoseMLP(cfg)

    def forward(self, poses: torch.Tensor) -> torch.Tensor:
        return self.net(poses)


class Projector(nn.Module):
    """Per block of a generator, three-layer linear maps from the average-pooled identity
    embedding to the adaptive parameters of the block (low-rank: one row per channel)."""

    def __init__(self, cfg: BilayerConfig, base, top, size, groups, bottleneck=1024):
        super().__init__()
        blocks = int(math.log2(cfg.image_size // size))
        self.channel_mults = []
        self.avgpools = nn.ModuleList()
        self.fc_blocks = nn.ModuleList()
        for i in range(blocks, 0, -1):
            embed = _channels(cfg.emb_num_channels, cfg.emb_max_channels, i)
            out_in, out = _channels(base, top, i), _channels(base, top, i - 1)
            mult = out_in / float(embed)
            s = int(bottleneck**0.5 * mult)
            self.channel_mults.append(mult)
            self.avgpools.append(nn.AdaptiveAvgPool2d((s, s)))
            sizes = {"norm": 2, "spade": out + 1, "skip": out_in + 1}
            self.fc_blocks.append(
                nn.ModuleList(
                    nn.Sequential(
                        nn.Linear(int(s**2 / mult), embed),
                        nn.Linear(embed, embed),
                        nn.Linear(embed, sizes[group]),
                    )
                    for group in groups
                )
            )

    def forward(self, embeds: list[torch.Tensor]) -> tuple[list, list]:
        weights, biases = [], []
        for embed, fcs, mult, pool in zip(
            embeds, self.fc_blocks, self.channel_mults, self.avgpools
        ):
            b, c = embed.shape[:2]
            rows = int(c * mult)
            x = pool(embed).view(b * rows, -1)
            for fc in fcs:
                params = fc(x).view(b, rows, -1)
                weight, bias = params[:, :, :-1], params[:, :, -1]
                if weight.shape[2] > 1:
                    weight = weight[..., None, None]  # a 1x1 convolution's weight
                else:
                    weight = weight[:, :, 0]  # a norm's scale
                weights.append(weight)
                biases.append(bias)
        return weights, biases


class UpGenerator(nn.Module):
    """Upsampling residual blocks from ``size`` to the image size, a last norm, the heads."""

    def __init__(self, cfg: BilayerConfig, base, top, size, norm, heads, efficient):
        super().__init__()
        blocks = int(math.log2(cfg.image_size // size))
        spade = norm == "ada_spade_bn"
        out = _channels(base, top, blocks)
        size = size if spade else 1
        layers: list[nn.Module] = []
        for i in range(blocks - 1, -1, -1):
            channels = _channels(base, top, i)
            layers.append(
                ResBlock(
                    out,
                    channels,
                    cfg.eps,
                    norm=norm,
                    resize="up",
                    spatial_size=size,
                    adaptive_skip=True,
                    efficient=efficient,
                    first_plain=i == blocks - 1,
                )
            )
            out = channels
            if spade:
                size *= 2
        layers += [AdaptiveNorm2d(out, size, spade, cfg.eps), leaky()]
        self.blocks = nn.Sequential(*layers)
        self.heads = nn.ModuleList()
        for outputs, tanh in heads:
            head = [nn.Conv2d(out, outputs, 3, 1, 1)] + ([nn.Tanh()] if tanh else [])
            self.heads.append(nn.Sequential(*head))

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = self.blocks(x).contiguous()
        return [head(x) for head in self.heads]


class TextureGenerator(nn.Module):
    """``texture_generator``: identity embeddings -> (B, 3, S, S) texture in [-1, 1]."""

    def __init__(self, cfg: BilayerConfig):
        super().__init__()
        size = cfg.tex_input_tensor_size
        self.gen_tex_input = nn.Parameter(torch.empty(1, cfg.tex_max_channels, size, size))
        base, top = cfg.tex_num_channels, cfg.tex_max_channels
        self.gen_tex = UpGenerator(cfg, base, top, size, "ada_spade_bn", [(3, True)], False)
        groups = ["spade", "spade", "skip", "spade", "spade"]
        self.prj_tex = Projector(cfg, base, top, size, groups)

    def forward(self, embeds: list[torch.Tensor]) -> torch.Tensor:
        weights, biases = self.prj_tex(embeds)
        assign_adaptive(self.gen_tex, weights, biases, norms=False)
        inputs = torch.cat([self.gen_tex_input] * embeds[0].shape[0])
        return self.gen_tex(inputs)[0]


class InferenceGenerator(nn.Module):
    """``inference_generator``: pose tensors -> (UVs (B, S, S, 2) where to sample the texture,
    low-frequency image (B, 3, S, S) in [-1, 1], segmentation logits (B, 1, S, S)), its
    parameters set by :meth:`adapt` from the identity embeddings."""

    def __init__(self, cfg: BilayerConfig):
        super().__init__()
        heads = [(2, True), (3, True), (1, False)]
        base, top, size = cfg.inf_num_channels, cfg.inf_max_channels, cfg.inf_input_tensor_size
        self.gen_inf = UpGenerator(cfg, base, top, size, "ada_bn", heads, True)
        self.prj_inf = Projector(cfg, base, top, size, ["norm", "skip", "norm"])
        grid = torch.linspace(-1, 1, cfg.image_size + 1)
        grid = (grid[1:] + grid[:-1]) / 2
        v, u = torch.meshgrid(grid, grid, indexing="ij")
        self.register_buffer("identity_grid", torch.stack([u, v], 2)[None])

    def adapt(self, embeds: list[torch.Tensor]) -> None:
        weights, biases = self.prj_inf(embeds)
        assign_adaptive(self.gen_inf, weights, biases, norms=True)

    def forward(self, pose_embeds: torch.Tensor):
        delta_uvs, lf_rgbs, segs_logits = self.gen_inf(pose_embeds)
        return self.identity_grid + delta_uvs.permute(0, 2, 3, 1), lf_rgbs, segs_logits


class EnhancerNet(nn.Module):
    def __init__(self, cfg: BilayerConfig):
        super().__init__()
        base, top = cfg.enh_num_channels, cfg.enh_max_channels
        downs = int(math.log2(cfg.image_size // cfg.enh_bottleneck_tensor_size))
        out = base
        layers: list[nn.Module] = [nn.Conv2d(6, base, 3, 1, 1)]
        for i in range(1, downs + 1):
            layers.append(ResBlock(out, _channels(base, top, i), cfg.eps, resize="down"))
            out = _channels(base, top, i)
        layers += [ResBlock(out, out, cfg.eps) for _ in range(cfg.enh_num_blocks)]
        for i in range(downs - 1, -1, -1):
            layers.append(ResBlock(out, _channels(base, top, i), cfg.eps, resize="up"))
            out = _channels(base, top, i)
        layers += [nn.Identity(), leaky(), nn.Conv2d(out, 3, 3, 1, 1)]
        self.blocks = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


class TextureEnhancer(nn.Module):
    """``texture_enhancer``: refines the texture so that the source, rendered in its own pose,
    matches the source image: each unrolled step feeds the texture and the gradient of the
    masked squared error (halved sum) with respect to it, and adds tanh of the output."""

    def __init__(self, cfg: BilayerConfig):
        super().__init__()
        self.steps = cfg.enh_unrolling_depth
        self.net = EnhancerNet(cfg)

    def forward(self, texture, source_uvs, source_lf, source_segs, source_imgs):
        real = source_imgs * source_segs + (-1) * (1 - source_segs)
        for _ in range(self.steps):
            with torch.enable_grad():
                probe = texture.detach().clone().requires_grad_(True)
                fake = source_lf + F.grid_sample(probe, source_uvs, align_corners=False)
                fake = fake * source_segs + (-1) * (1 - source_segs)
                loss = ((real - fake) ** 2).sum() / 2
                (grad,) = torch.autograd.grad(loss, probe)
            delta = torch.tanh(self.net(torch.cat([texture, grad], 1))[:, :3])
            texture = texture + delta
        return texture
