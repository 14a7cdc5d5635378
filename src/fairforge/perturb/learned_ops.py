"""Networks behind the learned ops: bmshj2018-factorized (learned compression) and DnCNN.

Both are rebuilt in plain torch from published state dicts (CompressAI's zoo format and
KAIR / DnCNN-PyTorch style ``<prefix>.<index>.<param>`` keys), so neither CompressAI nor the
training repositories are needed. Weights come from configured paths and are loaded with
``torch.load(..., weights_only=True)``.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from fairforge.perturb.base import OperationUnavailable


def load_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    path = Path(path)
    if not path.is_file():
        raise OperationUnavailable(f"weights not found at {path}", path)
    state = torch.load(path, map_location="cpu", weights_only=True)
    for key in ("state_dict", "model", "params"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    return {k.removeprefix("module."): v for k, v in state.items()}


def _image_to_tensor(image: np.ndarray, device: str) -> torch.Tensor:
    return torch.from_numpy(image).to(device).permute(2, 0, 1)[None].float() / 255.0


def _tensor_to_image(x: torch.Tensor) -> np.ndarray:
    out = (x[0].clamp(0, 1) * 255.0).round().to(torch.uint8).permute(1, 2, 0)
    return np.ascontiguousarray(out.cpu().numpy())


# --- bmshj2018-factorized -----------------------------------------------------------------

# CompressAI stores GDN's beta and gamma reparametrised: value = max(p, bound)^2 - pedestal.
_PEDESTAL = 2.0**-36
_BETA_MIN = 1e-6


class GDN(nn.Module):
    """Generalised divisive normalisation with plain (not reparametrised) beta and gamma."""

    def __init__(self, channels: int, inverse: bool = False):
        super().__init__()
        self.inverse = inverse
        self.beta = nn.Parameter(torch.ones(channels))
        self.gamma = nn.Parameter(0.1 * torch.eye(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = F.conv2d(x * x, self.gamma[:, :, None, None], self.beta)
        return x * (torch.sqrt(norm) if self.inverse else torch.rsqrt(norm))


def _conv(cin: int, cout: int) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 5, stride=2, padding=2)


def _deconv(cin: int, cout: int) -> nn.ConvTranspose2d:
    return nn.ConvTranspose2d(cin, cout, 5, stride=2, padding=2, output_padding=1)


#: CompressAI's EntropyBottleneck: hidden widths of its density network and the likelihood
#: floor its forward pass applies.
_DENSITY_FILTERS = (3, 3, 3, 3)
_LIKELIHOOD_BOUND = 1e-9


class FactorizedDensity(nn.Module):
    """The factorized prior's density (Ballé et al., ICLR 2018, appendix 6.1; CompressAI's
    ``EntropyBottleneck``): per latent channel a cumulative c(x) = sigmoid(f(x)), with f a
    small monotone network (softplus matrices, biases, tanh gates). The likelihood of a
    rounded latent value y is c(y + ½) − c(y − ½), floored at 1e-9 as CompressAI's is."""

    def __init__(self, channels: int, filters: tuple[int, ...] = _DENSITY_FILTERS):
        super().__init__()
        dims = (1, *filters, 1)
        self.matrices = nn.ParameterList(
            nn.Parameter(torch.zeros(channels, dims[i + 1], dims[i])) for i in range(len(dims) - 1)
        )
        self.biases = nn.ParameterList(
            nn.Parameter(torch.zeros(channels, dims[i + 1], 1)) for i in range(len(dims) - 1)
        )
        self.factors = nn.ParameterList(
            nn.Parameter(torch.zeros(channels, dims[i + 1], 1)) for i in range(len(filters))
        )

    def logits_cumulative(self, x: torch.Tensor) -> torch.Tensor:
        for i, (matrix, bias) in enumerate(zip(self.matrices, self.biases)):
            x = torch.matmul(F.softplus(matrix), x) + bias
            if i < len(self.factors):
                x = x + torch.tanh(self.factors[i]) * torch.tanh(x)
        return x

    def likelihood(self, y: torch.Tensor) -> torch.Tensor:
        """Likelihoods of ``y`` (B, C, H, W) of rounded latents."""
        values = y.transpose(0, 1).reshape(y.shape[1], 1, -1)
        lower = self.logits_cumulative(values - 0.5)
        upper = self.logits_cumulative(values + 0.5)
        sign = -torch.sign(lower + upper)  # the stabler side of the sigmoid, as CompressAI
        p = torch.abs(torch.sigmoid(sign * upper) - torch.sigmoid(sign * lower))
        return p.clamp_min(_LIKELIHOOD_BOUND)


class FactorizedPriorCodec(nn.Module):
    """Analysis/synthesis transforms of bmshj2018-factorized with rounding at the medians,
    and the prior's density (:meth:`bits`).

    Decoding the rounded latent is exactly what CompressAI's compress/decompress round trip
    reconstructs; the entropy coder only changes the bit count, not the image. The bit count
    is the latent's information under the prior, Σ −log2 p(ŷ) (what CompressAI reports as
    the estimated rate; its range coder's bitstream is within a few bytes of it).
    """

    def __init__(self, n: int, m: int):
        super().__init__()
        self.g_a = nn.Sequential(
            _conv(3, n), GDN(n), _conv(n, n), GDN(n), _conv(n, n), GDN(n), _conv(n, m)
        )
        self.g_s = nn.Sequential(
            _deconv(m, n),
            GDN(n, True),
            _deconv(n, n),
            GDN(n, True),
            _deconv(n, n),
            GDN(n, True),
            _deconv(n, 3),
        )
        self.register_buffer("medians", torch.zeros(m))
        self.density = FactorizedDensity(m)

    def quantized(self, x: torch.Tensor) -> torch.Tensor:
        y = self.g_a(x)
        medians = self.medians.view(1, -1, 1, 1)
        return torch.round(y - medians) + medians

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.g_s(self.quantized(x))

    @torch.no_grad()
    def bits(self, x: torch.Tensor) -> float:
        """Bits of the latent of ``x`` under the prior."""
        return float(-torch.log2(self.density.likelihood(self.quantized(x))).sum())


def _gdn_keys(state: dict) -> list[str]:
    return sorted({k.rsplit(".", 1)[0] for k in state if k.endswith(".gamma")})


# The density's keys as CompressAI has named them over its versions: ``_matrix0`` (the zoo's
# files), ``_matrices.0`` and ``matrices.0``.
_DENSITY_KEY = re.compile(r"^entropy_bottleneck\._?(matri|bias|factor)\w*?\.?(\d+)$")
_DENSITY_LISTS = {"matri": "matrices", "bias": "biases", "factor": "factors"}


def _density_state(state: dict) -> dict[str, torch.Tensor]:
    out = {}
    for key, value in state.items():
        match = _DENSITY_KEY.match(key)
        if match:
            out[f"density.{_DENSITY_LISTS[match.group(1)]}.{match.group(2)}"] = value
    return out


def codec_from_compressai(state: dict[str, torch.Tensor]) -> FactorizedPriorCodec:
    """Build the codec from a CompressAI ``FactorizedPrior`` state dict (its entropy
    bottleneck's density included: every zoo file has it)."""
    try:
        n, m = state["g_a.0.weight"].shape[0], state["g_a.6.weight"].shape[0]
        quantiles = state.get(
            "entropy_bottleneck.quantiles", state.get("entropy_bottleneck._quantiles")
        )
        if quantiles is None:
            raise KeyError("entropy_bottleneck.quantiles")
    except KeyError as err:
        raise ValueError(f"not a bmshj2018-factorized state dict: missing {err}") from None
    codec = FactorizedPriorCodec(n, m)
    own = {k: v for k, v in state.items() if k.startswith(("g_a.", "g_s.")) and "reparam" not in k}
    for prefix in _gdn_keys(state):
        for name, minimum in (("beta", _BETA_MIN), ("gamma", 0.0)):
            bound = state.get(f"{prefix}.{name}_reparam.lower_bound.bound")
            bound = float(bound) if bound is not None else (minimum + _PEDESTAL) ** 0.5
            own[f"{prefix}.{name}"] = state[f"{prefix}.{name}"].clamp_min(bound) ** 2 - _PEDESTAL
    own["medians"] = quantiles[:, 0, 1]
    density = _density_state(state)
    if len(density) != len(codec.density.state_dict()):
        raise ValueError(
            "not a bmshj2018-factorized state dict: its entropy bottleneck has "
            f"{len(density)} of the {len(codec.density.state_dict())} density tensors"
        )
    codec.load_state_dict({**own, **density})
    return codec.eval()


def compressai_state_dict(codec: FactorizedPriorCodec) -> dict[str, torch.Tensor]:
    """The inverse of :func:`codec_from_compressai` (CompressAI key names and reparam; the
    density under the zoo files' ``_matrix0`` names)."""
    state = {
        k: v.detach().clone()
        for k, v in codec.state_dict().items()
        if k != "medians" and not k.startswith("density.")
    }
    singular = {"matrices": "matrix", "biases": "bias", "factors": "factor"}
    for key, value in codec.density.state_dict().items():
        kind, index = key.split(".")
        state[f"entropy_bottleneck._{singular[kind]}{index}"] = value.detach().clone()
    for prefix in _gdn_keys(state):
        for name in ("beta", "gamma"):
            state[f"{prefix}.{name}"] = torch.sqrt(state[f"{prefix}.{name}"] + _PEDESTAL)
    m = codec.medians.numel()
    spread = torch.tensor([-10.0, 0.0, 10.0])
    state["entropy_bottleneck.quantiles"] = (codec.medians.view(m, 1, 1) + spread).clone()
    return state


@functools.lru_cache(maxsize=8)
def _cached_codec(path: str, mtime: float, device: str) -> FactorizedPriorCodec:
    return codec_from_compressai(load_state_dict(path)).to(device)


def load_codec(path: str | Path, device: str = "cpu") -> FactorizedPriorCodec:
    path = Path(path)
    if not path.is_file():
        raise OperationUnavailable(f"learned compression weights not found at {path}", path)
    return _cached_codec(str(path), path.stat().st_mtime, device)


def _codec_input(codec: FactorizedPriorCodec, image: np.ndarray) -> torch.Tensor:
    h, w = image.shape[:2]
    x = _image_to_tensor(image, next(codec.parameters()).device)
    # Four stride-2 stages: pad to a multiple of 16 (replicate, so no dark border appears).
    return F.pad(x, (0, -w % 16, 0, -h % 16), mode="replicate")


@torch.inference_mode()
def run_codec(codec: FactorizedPriorCodec, image: np.ndarray) -> np.ndarray:
    h, w = image.shape[:2]
    return _tensor_to_image(codec(_codec_input(codec, image))[:, :, :h, :w])


@torch.inference_mode()
def codec_bits(codec: FactorizedPriorCodec, image: np.ndarray) -> float:
    """Bits the codec spends on ``image`` (its padded latent under the prior)."""
    return codec.bits(_codec_input(codec, image))


# --- DnCNN --------------------------------------------------------------------------------

_LAYER_KEY = re.compile(r"^(.*?)(\d+)\.(weight|bias|running_mean|running_var|num_batches_tracked)$")


def dncnn_from_state(state: dict[str, torch.Tensor]) -> nn.Sequential:
    """A DnCNN-style ``nn.Sequential`` (conv, optional BN, ReLU, ..., conv) from its keys.

    Layer indices without parameters are ReLUs, as in KAIR and DnCNN-PyTorch checkpoints.
    """
    layers: dict[int, dict[str, torch.Tensor]] = {}
    prefixes = set()
    for key, value in state.items():
        match = _LAYER_KEY.match(key)
        if match is None:
            raise ValueError(f"unexpected key {key!r} in a DnCNN state dict")
        prefixes.add(match.group(1))
        layers.setdefault(int(match.group(2)), {})[match.group(3)] = value
    if len(prefixes) != 1 or not layers:
        raise ValueError(f"DnCNN state dict has layer prefixes {sorted(prefixes)}")
    modules: list[nn.Module] = []
    for index in range(max(layers) + 1):
        params = layers.get(index)
        if params is None:
            modules.append(nn.ReLU(inplace=True))
        elif "running_mean" in params:
            modules.append(nn.BatchNorm2d(params["weight"].shape[0]))
        else:
            cout, cin, kh, _ = params["weight"].shape
            modules.append(nn.Conv2d(cin, cout, kh, padding=kh // 2, bias="bias" in params))
    net = nn.Sequential(*modules)
    net.load_state_dict({f"{i}.{k}": v for i, p in layers.items() for k, v in p.items()})
    if net[0].in_channels != 3 or net[-1].out_channels != 3:
        raise ValueError("DnCNN weights must map 3 channels to 3 (a colour model)")
    return net.eval()


@functools.lru_cache(maxsize=4)
def _cached_dncnn(path: str, mtime: float, device: str) -> nn.Sequential:
    return dncnn_from_state(load_state_dict(path)).to(device)


def load_dncnn(path: str | Path, device: str = "cpu") -> nn.Sequential:
    path = Path(path)
    if not path.is_file():
        raise OperationUnavailable(f"DnCNN weights not found at {path}", path)
    return _cached_dncnn(str(path), path.stat().st_mtime, device)


@torch.inference_mode()
def run_dncnn(net: nn.Sequential, image: np.ndarray, passes: int = 1) -> np.ndarray:
    x = _image_to_tensor(image, next(net.parameters()).device)
    for _ in range(passes):
        # DnCNN predicts the noise; the clean estimate is the input minus it.
        x = (x - net(x)).clamp(0, 1)
    return _tensor_to_image(x)
