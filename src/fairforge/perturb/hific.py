"""HiFiC (Mentzer et al., "High-Fidelity Generative Image Compression", NeurIPS 2020) as its
public PyTorch release runs it (Justin-Tan/high-fidelity-generative-compression), rebuilt in
plain torch: what compressing and decompressing one image needs, nothing of training.

The pieces, under the release's module names so that its ``model_state_dict`` loads as saved:

- ``Encoder``: a 7×7 convolution, four stride-2 3×3 convolutions (reflection-padded on the
  right and top only) and a 3×3 projection to the latent channels, ChannelNorm and ReLU
  between them (16× downsampling).
- ``Hyperprior``: ``analysis_net`` (3×3, then two stride-2 5×5 convolutions with reflect
  padding: 4× more), ``synthesis_mu`` / ``synthesis_std`` (transposed convolutions back to the
  latent's size: the mean and scale of each latent), and ``hyperlatent_likelihood``, the
  factorized density of the hyperlatents (Ballé et al. 2018, §6.1; a tanh gate after every
  layer, the last included, which is where it differs from CompressAI's).
- ``Generator``: ChannelNorm, a 3×3 convolution and ChannelNorm, residual blocks with a skip
  around them all, four stride-2 transposed convolutions and a 7×7 convolution to RGB.

Evaluation as the release does it (``Model.compress`` then ``Model.decompress``): the image is
reflect-padded on the bottom and right to a multiple of 16, its latent to a multiple of 4
(a side of 64 px or less, which the release cannot code, is mirrored out to 80 px first);
the hyperlatents are rounded, the latents rounded around their predicted means; the
generator's output is cropped back to the image. Its ANS coder is lossless on those rounded
values, so it changes the bit count, not the image, and the bit count used here is the
release's estimate (its ``[ESTIMATED]`` bpp times the pixels): the information of the rounded
hyperlatents under their density plus that of the rounded latents under the conditional
Gaussian (or logistic) of width max(scale, 0.11), each likelihood floored at 1e-9 and
counted as −log2(p + 1e-9).

The release's checkpoints are ``torch.save`` of a dict holding ``model_state_dict``, the
optimizers' states and ``args`` (its training options). fairforge reads weights with
``weights_only=True`` only, so each file is converted once, offline, by
:func:`convert_release` (``python -m fairforge convert-release hific IN OUT``) into the
network's tensors and the three options that change evaluation (``likelihood_type``,
``normalize_input_image``, the regime); the op loads only the converted file.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import math
import re
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from fairforge.checkpoints import CheckpointMismatch, load_exact
from fairforge.perturb.base import OperationUnavailable

# Named in messages; the checkpoints, their levels and where they are published are the
# op's facts (fairforge.perturb.ops.HIFIC_RELEASE).
RELEASE = "Justin-Tan/high-fidelity-generative-compression"

# The release's constants (src/hyperprior.py, src/compression/*, src/normalisation/channel.py).
MIN_SCALE = 0.11
MIN_LIKELIHOOD = 1e-9
BITS_EPS = 1e-9  # added to every likelihood before the log in the rate estimate
CHANNEL_NORM_EPS = 1e-3
ENCODER_FACTOR = 16  # four stride-2 stages
HYPER_FACTOR = 4  # two more in the hyper-analysis
# The release cannot code an image side of 64 px or less: its latent is then 4 wide, and the
# hyper-analysis's last convolution would reflect-pad a 2-wide map by 2, which torch
# refuses. Such a side is mirrored out to 80 px (the next multiple of 16) first; a longer
# side is padded exactly as the release pads it.
MIN_CODED_SIDE = 80

# The parts of the release's Model that evaluation runs; the rest of its state dict (the
# discriminator, the LPIPS network of the training loss) is dropped by the conversion.
PARTS = (
    "Encoder.",
    "Generator.",
    "Hyperprior.analysis_net.",
    "Hyperprior.synthesis_mu.",
    "Hyperprior.synthesis_std.",
    "Hyperprior.hyperlatent_likelihood.",
)
LIKELIHOODS = ("gaussian", "logistic")


class ChannelNorm(nn.Module):
    """Normalisation over the channels of each pixel (not over space, as instance norm):
    (x − mean_c) / sqrt(var_c + 1e-3), var with Bessel's correction as ``torch.var``'s
    default, then a per-channel scale and shift."""

    def __init__(self, channels: int):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(1, channels, 1, 1))
        self.beta = nn.Parameter(torch.zeros(1, channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var, mean = torch.var_mean(x, dim=1, keepdim=True)
        return self.gamma * ((x - mean) * torch.rsqrt(var + CHANNEL_NORM_EPS)) + self.beta


class Encoder(nn.Module):
    def __init__(self, widths: tuple[int, ...], latent_channels: int):
        super().__init__()
        self.conv_block1 = nn.Sequential(
            nn.ReflectionPad2d(3), nn.Conv2d(3, widths[0], 7), ChannelNorm(widths[0]), nn.ReLU()
        )
        for i in range(1, len(widths)):
            # Padding one column on the right and one row on the top before a stride-2
            # 3×3 convolution halves an even size exactly (TensorFlow's 'same').
            block = nn.Sequential(
                nn.ReflectionPad2d((0, 1, 1, 0)),
                nn.Conv2d(widths[i - 1], widths[i], 3, stride=2),
                ChannelNorm(widths[i]),
                nn.ReLU(),
            )
            self.add_module(f"conv_block{i + 1}", block)
        self.n_blocks = len(widths)
        self.conv_block_out = nn.Sequential(
            nn.ReflectionPad2d(1), nn.Conv2d(widths[-1], latent_channels, 3)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(1, self.n_blocks + 1):
            x = getattr(self, f"conv_block{i}")(x)
        return self.conv_block_out(x)


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.pad = nn.ReflectionPad2d(1)
        self.conv1 = nn.Conv2d(channels, channels, 3)
        self.conv2 = nn.Conv2d(channels, channels, 3)
        self.norm1 = ChannelNorm(channels)
        self.norm2 = ChannelNorm(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        res = F.relu(self.norm1(self.conv1(self.pad(x))))
        return x + self.norm2(self.conv2(self.pad(res)))


class Generator(nn.Module):
    def __init__(self, widths: tuple[int, ...], latent_channels: int, n_residual_blocks: int):
        super().__init__()
        self.conv_block_init = nn.Sequential(
            ChannelNorm(latent_channels),
            nn.ReflectionPad2d(1),
            nn.Conv2d(latent_channels, widths[0], 3),
            ChannelNorm(widths[0]),
        )
        self.n_residual_blocks = n_residual_blocks
        for m in range(n_residual_blocks):
            self.add_module(f"resblock_{m}", ResidualBlock(widths[0]))
        for i in range(1, len(widths)):
            block = nn.Sequential(
                nn.ConvTranspose2d(
                    widths[i - 1], widths[i], 3, stride=2, padding=1, output_padding=1
                ),
                ChannelNorm(widths[i]),
                nn.ReLU(),
            )
            self.add_module(f"upconv_block{i}", block)
        self.n_upconv = len(widths) - 1
        self.conv_block_out = nn.Sequential(nn.ReflectionPad2d(3), nn.Conv2d(widths[-1], 3, 7))

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        head = self.conv_block_init(y)
        x = head
        for m in range(self.n_residual_blocks):
            x = getattr(self, f"resblock_{m}")(x)
        x = x + head
        for i in range(1, self.n_upconv + 1):
            x = getattr(self, f"upconv_block{i}")(x)
        return self.conv_block_out(x)


class HyperAnalysis(nn.Module):
    def __init__(self, latent_channels: int, filters: int):
        super().__init__()
        self.conv1 = nn.Conv2d(latent_channels, filters, 3, padding=1)
        down = dict(kernel_size=5, stride=2, padding=2, padding_mode="reflect")
        self.conv2 = nn.Conv2d(filters, filters, **down)
        self.conv3 = nn.Conv2d(filters, filters, **down)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return self.conv3(F.relu(self.conv2(F.relu(self.conv1(y)))))


class HyperSynthesis(nn.Module):
    def __init__(self, latent_channels: int, filters: int):
        super().__init__()
        up = dict(kernel_size=5, stride=2, padding=2, output_padding=1)
        self.conv1 = nn.ConvTranspose2d(filters, filters, **up)
        self.conv2 = nn.ConvTranspose2d(filters, filters, **up)
        self.conv3 = nn.ConvTranspose2d(filters, latent_channels, 3, padding=1)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.conv3(F.relu(self.conv2(F.relu(self.conv1(z)))))


class HyperlatentDensity(nn.Module):
    """Per channel a cumulative c(x) = sigmoid(f(x)) with f a small monotone network:
    softplus(H_k) matrices, biases b_k, and a gate tanh(a_k)·tanh(·) after every layer. The
    likelihood of a rounded value z is c(z + ½) − c(z − ½), evaluated on the side of the
    sigmoid where it does not cancel, floored at 1e-9."""

    def __init__(self, channels: int, filters: tuple[int, ...] = (3, 3, 3)):
        super().__init__()
        dims = (1, *filters, 1)
        self.n_layers = len(dims) - 1
        for k in range(self.n_layers):
            self.register_parameter(
                f"H_{k}", nn.Parameter(torch.zeros(channels, dims[k + 1], dims[k]))
            )
            self.register_parameter(f"a_{k}", nn.Parameter(torch.zeros(channels, dims[k + 1], 1)))
            self.register_parameter(f"b_{k}", nn.Parameter(torch.zeros(channels, dims[k + 1], 1)))

    def cdf_logits(self, x: torch.Tensor) -> torch.Tensor:
        for k in range(self.n_layers):
            x = torch.bmm(F.softplus(getattr(self, f"H_{k}")), x) + getattr(self, f"b_{k}")
            x = x + torch.tanh(getattr(self, f"a_{k}")) * torch.tanh(x)
        return x

    def likelihood(self, z: torch.Tensor) -> torch.Tensor:
        """Likelihoods of rounded hyperlatents ``z`` (B, C, H, W), in the channel-major
        layout (C, 1, B·H·W); only their sum is used."""
        values = z.transpose(0, 1).reshape(z.shape[1], 1, -1)
        upper = self.cdf_logits(values + 0.5)
        lower = self.cdf_logits(values - 0.5)
        sign = -torch.sign(upper + lower)
        p = torch.abs(torch.sigmoid(sign * upper) - torch.sigmoid(sign * lower))
        return p.clamp_min(MIN_LIKELIHOOD)


class Hyperprior(nn.Module):
    def __init__(self, latent_channels: int, filters: int, density_filters: tuple[int, ...]):
        super().__init__()
        self.analysis_net = HyperAnalysis(latent_channels, filters)
        self.synthesis_mu = HyperSynthesis(latent_channels, filters)
        self.synthesis_std = HyperSynthesis(latent_channels, filters)
        self.hyperlatent_likelihood = HyperlatentDensity(filters, density_filters)


def _standard_cdf(kind: str, v: torch.Tensor) -> torch.Tensor:
    if kind == "logistic":
        return torch.sigmoid(v)
    return 0.5 * torch.erfc(v * (-1.0 / math.sqrt(2.0)))


def _bits(likelihood: torch.Tensor) -> torch.Tensor:
    return -torch.log(likelihood + BITS_EPS).sum() / math.log(2.0)


def _pad_to(x: torch.Tensor, factor: int, least: int = 0) -> torch.Tensor:
    """Reflect-pad the bottom and right to a multiple of ``factor`` (and to ``least``
    pixels at least), mirroring again while one reflection cannot reach."""
    h, w = x.shape[-2:]
    target_h = max(h + (-h % factor), least)
    target_w = max(w + (-w % factor), least)
    while x.shape[-2] < target_h or x.shape[-1] < target_w:
        h, w = x.shape[-2:]
        dh, dw = min(target_h - h, h - 1), min(target_w - w, w - 1)
        x = F.pad(x, (0, dw, 0, dh), mode="reflect" if min(h, w) > 1 else "replicate")
    return x


class HiFiC(nn.Module):
    """The evaluation path of the release's ``Model``: :meth:`forward` gives the decoded
    image of a (B, 3, H, W) batch in [0, 1] and the bits it costs."""

    def __init__(
        self,
        latent_channels: int = 220,
        n_residual_blocks: int = 9,
        encoder_widths: tuple[int, ...] = (60, 120, 240, 480, 960),
        hyper_filters: int = 320,
        density_filters: tuple[int, ...] = (3, 3, 3),
        likelihood_type: str = "gaussian",
        normalize_input_image: bool = False,
    ):
        super().__init__()
        if likelihood_type not in LIKELIHOODS:
            raise ValueError(f"HiFiC likelihood_type {likelihood_type!r} not one of {LIKELIHOODS}")
        self.likelihood_type = likelihood_type
        self.normalize_input_image = bool(normalize_input_image)
        self.Encoder = Encoder(tuple(encoder_widths), latent_channels)
        self.Generator = Generator(tuple(encoder_widths[::-1]), latent_channels, n_residual_blocks)
        self.Hyperprior = Hyperprior(latent_channels, hyper_filters, tuple(density_filters))

    @classmethod
    def for_state(cls, state: dict, hparams: dict) -> HiFiC:
        """The network whose widths and depth the state dict's shapes say (the release fixes
        them; reading them lets a smaller network of the same layout load too)."""
        try:
            widths, i = [], 1
            while f"Encoder.conv_block{i}.1.weight" in state:
                widths.append(int(state[f"Encoder.conv_block{i}.1.weight"].shape[0]))
                i += 1
            latent = int(state["Encoder.conv_block_out.1.weight"].shape[0])
            filters = int(state["Hyperprior.analysis_net.conv1.weight"].shape[0])
            density, k = [], 0
            while f"Hyperprior.hyperlatent_likelihood.H_{k + 1}" in state:
                density.append(int(state[f"Hyperprior.hyperlatent_likelihood.H_{k}"].shape[1]))
                k += 1
        except KeyError as err:
            raise CheckpointMismatch(f"not a HiFiC state dict: it has no {err}") from None
        blocks = {k.split(".")[1] for k in state if k.startswith("Generator.resblock_")}
        return cls(
            latent_channels=latent,
            n_residual_blocks=len(blocks),
            encoder_widths=tuple(widths),
            hyper_filters=filters,
            density_filters=tuple(density),
            likelihood_type=str(hparams.get("likelihood_type", "gaussian")),
            normalize_input_image=bool(hparams.get("normalize_input_image", False)),
        )

    def latent_likelihood(
        self, y_hat: torch.Tensor, mean: torch.Tensor, scale: torch.Tensor
    ) -> torch.Tensor:
        # The mass of [ŷ − ½, ŷ + ½] computed on the left tail (symmetric densities): no
        # cancellation of two numbers near 1.
        d = torch.abs(y_hat - mean)
        upper = _standard_cdf(self.likelihood_type, (0.5 - d) / scale)
        lower = _standard_cdf(self.likelihood_type, -(0.5 + d) / scale)
        return (upper - lower).clamp_min(MIN_LIKELIHOOD)

    def compress(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The rounded latent of a (B, 3, H, W) batch in [0, 1] (padded as the release pads)
        and the bits of the rounded latents and hyperlatents (the whole batch's)."""
        if self.normalize_input_image:
            x = 2.0 * x - 1.0
        x = _pad_to(x, ENCODER_FACTOR, least=MIN_CODED_SIDE)
        y = _pad_to(self.Encoder(x), HYPER_FACTOR)
        hyper = self.Hyperprior
        z_hat = torch.floor(hyper.analysis_net(y) + 0.5)
        mean = hyper.synthesis_mu(z_hat)
        scale = hyper.synthesis_std(z_hat).clamp_min(MIN_SCALE)
        y_hat = torch.floor(y - mean + 0.5) + mean
        bits = _bits(hyper.hyperlatent_likelihood.likelihood(z_hat))
        return y_hat, bits + _bits(self.latent_likelihood(y_hat, mean, scale))

    def decompress(self, y_hat: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        """The decoded image in [0, 1], cropped to ``size`` (H, W)."""
        out = self.Generator(y_hat)[..., : size[0], : size[1]]
        if self.normalize_input_image:
            out = (torch.tanh(out) + 1.0) / 2.0
        return out.clamp(0.0, 1.0)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The decoded image of ``x`` and its bits."""
        y_hat, bits = self.compress(x)
        return self.decompress(y_hat, tuple(x.shape[-2:])), bits


# --- the converted file -------------------------------------------------------------------


def _release_globals() -> list:
    """Non-tensor types a release checkpoint may pickle in ``args`` besides plain
    containers: an argparse Namespace and numpy scalars (all data, no code)."""
    allowed: list = [argparse.Namespace, np.dtype]
    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            allowed.append(importlib.import_module(module).scalar)
            break
        except (ImportError, AttributeError):
            continue
    allowed += [type(np.dtype(t)) for t in ("float64", "float32", "int64", "int32", "bool")]
    return allowed


def _refusal(err: Exception) -> str:
    """The line of torch's weights-only refusal that names what it refused (its other lines
    advise loading the file unrestricted, which fairforge does not)."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in str(err).splitlines()]
    named = [line for line in lines if "Unsupported global" in line]
    return (named or [line for line in lines if line] or [type(err).__name__])[0]


def _options(args) -> dict:
    if isinstance(args, argparse.Namespace):
        args = vars(args)
    if not isinstance(args, dict):
        raise CheckpointMismatch(f"the release's 'args' is a {type(args).__name__}, not a dict")
    return args


def evaluation_options(args) -> dict:
    """The options of a release's ``args`` that change evaluation, as plain values; raises
    for the release's variants this module does not rebuild."""
    args = _options(args)
    unsupported = {
        "use_latent_mixture_model": "the latent mixture model (HyperpriorDLMM)",
        "sample_noise": "a generator that samples noise",
    }
    for key, what in unsupported.items():
        if bool(args.get(key, False)):
            raise CheckpointMismatch(f"this HiFiC checkpoint uses {what}, not rebuilt here")
    if not bool(args.get("use_channel_norm", True)):
        raise CheckpointMismatch("this HiFiC checkpoint uses instance norm, not rebuilt here")
    likelihood = str(args.get("likelihood_type", "gaussian"))
    if likelihood not in LIKELIHOODS:
        raise CheckpointMismatch(f"HiFiC likelihood_type {likelihood!r} not one of {LIKELIHOODS}")
    return {
        "likelihood_type": likelihood,
        "normalize_input_image": bool(args.get("normalize_input_image", False)),
        "regime": str(args.get("regime", "")),
    }


def convert_release(src: str | Path, dst: str | Path) -> dict:
    """Write a release checkpoint (``src``: ``torch.save`` of ``model_state_dict``, ``args``,
    optimizers...) as the file :func:`load_hific` reads (``dst``): ``model_state_dict`` with
    the evaluation parts only and ``hparams`` (plain values). The release is read with torch's
    weights-only unpickler, admitting besides tensors only an argparse Namespace and numpy
    scalars; every tensor is checked against the network built for it."""
    src, dst = Path(src), Path(dst)
    if not src.is_file():
        raise FileNotFoundError(f"HiFiC release checkpoint not found: expected a file at {src}")
    try:
        with torch.serialization.safe_globals(_release_globals()):
            checkpoint = torch.load(src, map_location="cpu", weights_only=True)
    except Exception as err:
        raise CheckpointMismatch(
            f"{src} is not a HiFiC release checkpoint ({_refusal(err)})"
        ) from None
    if not isinstance(checkpoint, dict) or "model_state_dict" not in checkpoint:
        raise CheckpointMismatch(
            f"{src} has no 'model_state_dict': not a checkpoint of the HiFiC release ({RELEASE})"
        )
    state = {k.removeprefix("module."): v for k, v in checkpoint["model_state_dict"].items()}
    state = {k: v.detach().clone() for k, v in state.items() if k.startswith(PARTS)}
    hparams = evaluation_options(checkpoint.get("args", {}))
    net = HiFiC.for_state(state, hparams)
    load_exact(net, state, f"HiFiC in {src}")
    dst.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model_state_dict": state, "hparams": hparams}, dst)
    return {
        "tensors": len(state),
        "parameters": sum(v.numel() for v in state.values()),
        **hparams,
        "out": str(dst),
    }


def read_converted(path: str | Path) -> tuple[dict, dict]:
    """``(state, hparams)`` of a converted file (``weights_only=True``). A release file not
    yet converted, or another file, raises :class:`CheckpointMismatch` saying so."""
    path = Path(path)
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise CheckpointMismatch(
            f"HiFiC weights at {path} cannot be read with weights_only=True ({_refusal(err)}); a "
            "release checkpoint is converted once with "
            "`python -m fairforge convert-release hific IN OUT`"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("hparams"), dict):
        raise CheckpointMismatch(
            f"HiFiC weights at {path} are not a converted file (no 'hparams'); convert the "
            "release checkpoint with `python -m fairforge convert-release hific IN OUT`"
        )
    return dict(data["model_state_dict"]), dict(data["hparams"])


def hific_from_file(path: str | Path) -> HiFiC:
    state, hparams = read_converted(path)
    net = HiFiC.for_state(state, hparams)
    load_exact(net, state, f"HiFiC weights at {path}")
    return net.eval()


@functools.lru_cache(maxsize=3)
def _cached(path: str, mtime: float, device: str) -> HiFiC:
    return hific_from_file(path).to(device)


def load_hific(path: str | Path, device: str = "cpu") -> HiFiC:
    """The network of a converted file, cached per path, mtime and device."""
    path = Path(path)
    if not path.is_file():
        raise OperationUnavailable(f"converted HiFiC weights not found at {path}", path)
    return _cached(str(path), path.stat().st_mtime, device)


def _input(net: HiFiC, image: np.ndarray) -> torch.Tensor:
    x = torch.from_numpy(image).to(next(net.parameters()).device)
    return x.permute(2, 0, 1)[None].float() / 255.0


@torch.inference_mode()
def run_hific(net: HiFiC, image: np.ndarray) -> np.ndarray:
    """``image`` (uint8 HxWx3) compressed and decompressed."""
    out, _ = net(_input(net, image))
    pixels = (out[0] * 255.0).round().to(torch.uint8).permute(1, 2, 0)
    return np.ascontiguousarray(pixels.cpu().numpy())


@torch.inference_mode()
def hific_bits(net: HiFiC, image: np.ndarray) -> float:
    """The bits ``image`` costs (the generator is not run)."""
    return float(net.compress(_input(net, image))[1])
