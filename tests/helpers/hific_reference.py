"""A test-side re-statement of HiFiC's PyTorch release (Justin-Tan/high-fidelity-generative-
compression), written from reading it, to check ``fairforge.perturb.hific`` against.

It keeps the release's module and attribute names, its order of operations and its quirks:
``ChannelNorm2D`` of ``src/normalisation/channel.py`` (eps 1e-3, ``torch.var``'s unbiased
variance); ``Encoder`` of ``src/network/encoder.py`` and ``Generator`` / ``ResidualBlock`` of
``src/network/generator.py`` (the shared ``ReflectionPad2d`` layers, ``x += head``);
``HyperpriorAnalysis`` / ``HyperpriorSynthesis`` of ``src/network/hyper.py`` (reflect padding
in the analysis's strided convolutions); ``HyperpriorDensity`` of
``src/compression/hyperprior_model.py``; ``CodingModel`` / ``Hyperprior`` of
``src/hyperprior.py`` (``_quantize`` with ``floor(x + 0.5)``, ``quantize_latents_st``,
``latent_likelihood``, ``lower_bound_toward`` as its forward clamp); the two rate estimates
of ``Hyperprior.compress_forward`` (``_estimate_compression_bits`` of the hyperprior and prior
entropy models: ``quantize_st``, ``log(p + 1e-9)``); ``pad_factor`` of
``src/helpers/utils.py``; and ``Model.compression_forward`` / ``Model.forward`` /
``compress`` / ``decompress`` of ``src/model.py`` in evaluation mode.

Left out: training (the noisy-quantisation rate, losses, the discriminator, LPIPS) and the
ANS coder, which is lossless on the rounded symbols: ``decompress`` here rebuilds the latent
from the symbols ``compress`` would code (``floor(y + 0.5 - mean)``) plus the mean, as the
release's ``PriorEntropyModel.decompress`` does after decoding them.

One change, for speed only: the layer widths the release fixes (encoder filters 60..960,
hyperlatent filters 320) are arguments here, defaulting to the release's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MIN_SCALE = 0.11
MIN_LIKELIHOOD = 1e-9
MAX_LIKELIHOOD = 1e3
LARGE_HYPERLATENT_FILTERS = 320

# --- src/helpers/maths.py -------------------------------------------------------------------


def lower_bound_toward(tensor, lower_bound):
    # LowerBoundToward.forward (its backward only changes gradients)
    return torch.clamp(tensor, lower_bound)


def standardized_CDF_gaussian(value):
    return 0.5 * torch.erfc(value * (-1.0 / np.sqrt(2)))


def standardized_CDF_logistic(value):
    return torch.sigmoid(value)


# --- src/helpers/utils.py -------------------------------------------------------------------


class Struct:
    def __init__(self, **entries):
        self.__dict__.update(entries)


def pad_factor(input_image, spatial_dims, factor):
    """Pad `input_image` (N,C,H,W) such that H and W are divisible by `factor`."""
    if isinstance(factor, int) is True:
        factor_H = factor
        factor_W = factor_H
    else:
        factor_H, factor_W = factor
    H, W = spatial_dims[0], spatial_dims[1]
    pad_H = (factor_H - (H % factor_H)) % factor_H
    pad_W = (factor_W - (W % factor_W)) % factor_W
    return F.pad(input_image, pad=(0, pad_W, 0, pad_H), mode="reflect")


# --- src/normalisation/channel.py ------------------------------------------------------------


def ChannelNorm2D_wrap(
    input_channels, momentum=0.1, affine=True, track_running_stats=False, **kwargs
):
    return ChannelNorm2D(
        input_channels, momentum=momentum, affine=affine, track_running_stats=track_running_stats
    )


class ChannelNorm2D(nn.Module):
    def __init__(self, input_channels, momentum=0.1, eps=1e-3, affine=True, **kwargs):
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.affine = affine
        if affine is True:
            self.gamma = nn.Parameter(torch.ones(1, input_channels, 1, 1))
            self.beta = nn.Parameter(torch.zeros(1, input_channels, 1, 1))

    def forward(self, x):
        mu, var = torch.mean(x, dim=1, keepdim=True), torch.var(x, dim=1, keepdim=True)
        x_normed = (x - mu) * torch.rsqrt(var + self.eps)
        if self.affine is True:
            x_normed = self.gamma * x_normed + self.beta
        return x_normed


# --- src/network/encoder.py ------------------------------------------------------------------


class Encoder(nn.Module):
    def __init__(
        self,
        image_dims,
        batch_size,
        activation="relu",
        C=220,
        channel_norm=True,
        filters=(60, 120, 240, 480, 960),
    ):
        super().__init__()
        kernel_dim = 3
        im_channels = image_dims[0]
        cnn_kwargs = dict(stride=2, padding=0, padding_mode="reflect")
        norm_kwargs = dict(momentum=0.1, affine=True, track_running_stats=False)
        activation_d = dict(relu="ReLU", elu="ELU", leaky_relu="LeakyReLU")
        self.activation = getattr(nn, activation_d[activation])
        self.n_downsampling_layers = 4
        assert channel_norm is True  # the release's instance-norm option is not re-stated
        self.interlayer_norm = ChannelNorm2D_wrap

        self.pre_pad = nn.ReflectionPad2d(3)
        self.asymmetric_pad = nn.ReflectionPad2d((0, 1, 1, 0))
        self.post_pad = nn.ReflectionPad2d(1)

        self.conv_block1 = nn.Sequential(
            self.pre_pad,
            nn.Conv2d(im_channels, filters[0], kernel_size=(7, 7), stride=1),
            self.interlayer_norm(filters[0], **norm_kwargs),
            self.activation(),
        )
        self.conv_block2 = nn.Sequential(
            self.asymmetric_pad,
            nn.Conv2d(filters[0], filters[1], kernel_dim, **cnn_kwargs),
            self.interlayer_norm(filters[1], **norm_kwargs),
            self.activation(),
        )
        self.conv_block3 = nn.Sequential(
            self.asymmetric_pad,
            nn.Conv2d(filters[1], filters[2], kernel_dim, **cnn_kwargs),
            self.interlayer_norm(filters[2], **norm_kwargs),
            self.activation(),
        )
        self.conv_block4 = nn.Sequential(
            self.asymmetric_pad,
            nn.Conv2d(filters[2], filters[3], kernel_dim, **cnn_kwargs),
            self.interlayer_norm(filters[3], **norm_kwargs),
            self.activation(),
        )
        self.conv_block5 = nn.Sequential(
            self.asymmetric_pad,
            nn.Conv2d(filters[3], filters[4], kernel_dim, **cnn_kwargs),
            self.interlayer_norm(filters[4], **norm_kwargs),
            self.activation(),
        )
        self.conv_block_out = nn.Sequential(
            self.post_pad,
            nn.Conv2d(filters[4], C, kernel_dim, stride=1),
        )

    def forward(self, x):
        x = self.conv_block1(x)
        x = self.conv_block2(x)
        x = self.conv_block3(x)
        x = self.conv_block4(x)
        x = self.conv_block5(x)
        out = self.conv_block_out(x)
        return out


# --- src/network/generator.py ----------------------------------------------------------------


class ResidualBlock(nn.Module):
    def __init__(self, input_dims, kernel_size=3, stride=1, channel_norm=True, activation="relu"):
        super().__init__()
        self.activation = getattr(F, activation)
        in_channels = input_dims[1]
        norm_kwargs = dict(momentum=0.1, affine=True, track_running_stats=False)
        self.interlayer_norm = ChannelNorm2D_wrap
        pad_size = int((kernel_size - 1) / 2)
        self.pad = nn.ReflectionPad2d(pad_size)
        self.conv1 = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride)
        self.conv2 = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride)
        self.norm1 = self.interlayer_norm(in_channels, **norm_kwargs)
        self.norm2 = self.interlayer_norm(in_channels, **norm_kwargs)

    def forward(self, x):
        identity_map = x
        res = self.pad(x)
        res = self.conv1(res)
        res = self.norm1(res)
        res = self.activation(res)
        res = self.pad(res)
        res = self.conv2(res)
        res = self.norm2(res)
        return torch.add(res, identity_map)


class Generator(nn.Module):
    def __init__(
        self,
        input_dims,
        batch_size,
        C=16,
        activation="relu",
        n_residual_blocks=8,
        channel_norm=True,
        sample_noise=False,
        noise_dim=32,
        filters=(960, 480, 240, 120, 60),
    ):
        super().__init__()
        kernel_dim = 3
        filters = list(filters)
        self.n_residual_blocks = n_residual_blocks
        self.sample_noise = sample_noise
        self.noise_dim = noise_dim
        cnn_kwargs = dict(stride=2, padding=1, output_padding=1)
        norm_kwargs = dict(momentum=0.1, affine=True, track_running_stats=False)
        activation_d = dict(relu="ReLU", elu="ELU", leaky_relu="LeakyReLU")
        self.activation = getattr(nn, activation_d[activation])
        self.n_upsampling_layers = 4
        self.interlayer_norm = ChannelNorm2D_wrap

        self.pre_pad = nn.ReflectionPad2d(1)
        self.asymmetric_pad = nn.ReflectionPad2d((0, 1, 1, 0))
        self.post_pad = nn.ReflectionPad2d(3)

        H0, W0 = input_dims[1:]

        self.conv_block_init = nn.Sequential(
            self.interlayer_norm(C, **norm_kwargs),
            self.pre_pad,
            nn.Conv2d(C, filters[0], kernel_size=(3, 3), stride=1),
            self.interlayer_norm(filters[0], **norm_kwargs),
        )
        if sample_noise is True:
            filters[0] += self.noise_dim
        for m in range(n_residual_blocks):
            resblock_m = ResidualBlock(
                input_dims=(batch_size, filters[0], H0, W0),
                channel_norm=channel_norm,
                activation=activation,
            )
            self.add_module(f"resblock_{str(m)}", resblock_m)
        self.upconv_block1 = nn.Sequential(
            nn.ConvTranspose2d(filters[0], filters[1], kernel_dim, **cnn_kwargs),
            self.interlayer_norm(filters[1], **norm_kwargs),
            self.activation(),
        )
        self.upconv_block2 = nn.Sequential(
            nn.ConvTranspose2d(filters[1], filters[2], kernel_dim, **cnn_kwargs),
            self.interlayer_norm(filters[2], **norm_kwargs),
            self.activation(),
        )
        self.upconv_block3 = nn.Sequential(
            nn.ConvTranspose2d(filters[2], filters[3], kernel_dim, **cnn_kwargs),
            self.interlayer_norm(filters[3], **norm_kwargs),
            self.activation(),
        )
        self.upconv_block4 = nn.Sequential(
            nn.ConvTranspose2d(filters[3], filters[4], kernel_dim, **cnn_kwargs),
            self.interlayer_norm(filters[4], **norm_kwargs),
            self.activation(),
        )
        self.conv_block_out = nn.Sequential(
            self.post_pad,
            nn.Conv2d(filters[-1], 3, kernel_size=(7, 7), stride=1),
        )

    def forward(self, x):
        head = self.conv_block_init(x)
        for m in range(self.n_residual_blocks):
            resblock_m = getattr(self, f"resblock_{str(m)}")
            if m == 0:
                x = resblock_m(head)
            else:
                x = resblock_m(x)
        x += head
        x = self.upconv_block1(x)
        x = self.upconv_block2(x)
        x = self.upconv_block3(x)
        x = self.upconv_block4(x)
        out = self.conv_block_out(x)
        return out


# --- src/network/hyper.py --------------------------------------------------------------------


class HyperpriorAnalysis(nn.Module):
    def __init__(self, C=220, N=320, activation="relu"):
        super().__init__()
        cnn_kwargs = dict(kernel_size=5, stride=2, padding=2, padding_mode="reflect")
        self.activation = getattr(F, activation)
        self.n_downsampling_layers = 2
        self.conv1 = nn.Conv2d(C, N, kernel_size=3, stride=1, padding=1)
        self.conv2 = nn.Conv2d(N, N, **cnn_kwargs)
        self.conv3 = nn.Conv2d(N, N, **cnn_kwargs)

    def forward(self, x):
        x = self.activation(self.conv1(x))
        x = self.activation(self.conv2(x))
        x = self.conv3(x)
        return x


class HyperpriorSynthesis(nn.Module):
    def __init__(self, C=220, N=320, activation="relu", final_activation=None):
        super().__init__()
        cnn_kwargs = dict(kernel_size=5, stride=2, padding=2, output_padding=1)
        self.activation = getattr(F, activation)
        self.final_activation = final_activation
        self.conv1 = nn.ConvTranspose2d(N, N, **cnn_kwargs)
        self.conv2 = nn.ConvTranspose2d(N, N, **cnn_kwargs)
        self.conv3 = nn.ConvTranspose2d(N, C, kernel_size=3, stride=1, padding=1)
        if self.final_activation is not None:
            self.final_activation = getattr(F, final_activation)

    def forward(self, x):
        x = self.activation(self.conv1(x))
        x = self.activation(self.conv2(x))
        x = self.conv3(x)
        if self.final_activation is not None:
            x = self.final_activation(x)
        return x


# --- src/compression/hyperprior_model.py -----------------------------------------------------


class HyperpriorDensity(nn.Module):
    def __init__(
        self,
        n_channels,
        init_scale=10.0,
        filters=(3, 3, 3),
        min_likelihood=MIN_LIKELIHOOD,
        max_likelihood=MAX_LIKELIHOOD,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.init_scale = float(init_scale)
        self.filters = tuple(int(f) for f in filters)
        self.min_likelihood = float(min_likelihood)
        self.max_likelihood = float(max_likelihood)
        self.n_channels = n_channels
        self.dtype = torch.float32
        filters = (1,) + self.filters + (1,)
        scale = self.init_scale ** (1 / (len(self.filters) + 1))
        for k in range(len(self.filters) + 1):
            H_init = np.log(np.expm1(1 / scale / filters[k + 1]))
            H_k = nn.Parameter(torch.ones((n_channels, filters[k + 1], filters[k])))
            torch.nn.init.constant_(H_k, H_init)
            self.register_parameter(f"H_{k}", H_k)
            a_k = nn.Parameter(torch.zeros((n_channels, filters[k + 1], 1)))
            self.register_parameter(f"a_{k}", a_k)
            b_k = nn.Parameter(torch.zeros((n_channels, filters[k + 1], 1)))
            torch.nn.init.uniform_(b_k, -0.5, 0.5)
            self.register_parameter(f"b_{k}", b_k)

    def cdf_logits(self, x, update_parameters=True):
        logits = x
        for k in range(len(self.filters) + 1):
            H_k = getattr(self, f"H_{str(k)}")
            a_k = getattr(self, f"a_{str(k)}")
            b_k = getattr(self, f"b_{str(k)}")
            if update_parameters is False:
                H_k, a_k, b_k = H_k.detach(), a_k.detach(), b_k.detach()
            logits = torch.bmm(F.softplus(H_k), logits)
            logits = logits + b_k
            logits = logits + torch.tanh(a_k) * torch.tanh(logits)
        return logits

    def likelihood(self, x, collapsed_format=False, **kwargs):
        latents = x
        if collapsed_format is False:
            N, C, H, W = latents.size()
            latents = latents.permute(1, 0, 2, 3)
            shape = latents.shape
            latents = torch.reshape(latents, (shape[0], 1, -1))
        cdf_upper = self.cdf_logits(latents + 0.5)
        cdf_lower = self.cdf_logits(latents - 0.5)
        sign = -torch.sign(cdf_upper + cdf_lower)
        sign = sign.detach()
        likelihood_ = torch.abs(torch.sigmoid(sign * cdf_upper) - torch.sigmoid(sign * cdf_lower))
        likelihood_ = lower_bound_toward(likelihood_, self.min_likelihood)
        if collapsed_format is True:
            return likelihood_
        likelihood_ = torch.reshape(likelihood_, shape)
        likelihood_ = likelihood_.permute(1, 0, 2, 3)
        return likelihood_

    def forward(self, x, **kwargs):
        return self.likelihood(x)


# --- src/compression/entropy_models.py, prior_model.py: the rate estimates -------------------


def quantize_st(inputs, offsets=None):
    values = inputs
    if offsets is not None:
        offsets = offsets.to(values)
        values = values - offsets
    delta = (torch.floor(values + 0.5) - values).detach()
    values = values + delta
    if offsets is not None:
        values = values + offsets
    return values


def _estimate_compression_bits(likelihood, spatial_shape):
    EPS = 1e-9
    quotient = -np.log(2.0)
    batch_size = likelihood.size()[0]
    n_pixels = np.prod(spatial_shape)
    log_likelihood = torch.log(likelihood + EPS)
    n_bits = torch.sum(log_likelihood) / (quotient)
    bpi = n_bits / batch_size
    bpp = n_bits / n_pixels
    return n_bits, bpp, bpi


# --- src/hyperprior.py -----------------------------------------------------------------------


class CodingModel(nn.Module):
    def __init__(self, n_channels, min_likelihood=MIN_LIKELIHOOD, max_likelihood=MAX_LIKELIHOOD):
        super().__init__()
        self.n_channels = n_channels
        self.min_likelihood = float(min_likelihood)
        self.max_likelihood = float(max_likelihood)

    def _quantize(self, x, mode="noise", means=None):
        if mode == "quantize":
            if means is not None:
                x = x - means
                x = torch.floor(x + 0.5)
                x = x + means
            else:
                x = torch.floor(x + 0.5)
        else:
            raise NotImplementedError  # the training mode's noise is not re-stated
        return x

    def _estimate_entropy(self, likelihood, spatial_shape):
        EPS = 1e-9
        quotient = -np.log(2.0)
        batch_size = likelihood.size()[0]
        n_pixels = np.prod(spatial_shape)
        log_likelihood = torch.log(likelihood + EPS)
        n_bits = torch.sum(log_likelihood) / (batch_size * quotient)
        bpp = n_bits / n_pixels
        return n_bits, bpp

    def quantize_latents_st(self, inputs, means=None):
        values = inputs
        if means is not None:
            values = values - means
        delta = (torch.floor(values + 0.5) - values).detach()
        values = values + delta
        if means is not None:
            values = values + means
        return values

    def latent_likelihood(self, x, mean, scale):
        x = x - mean
        x = torch.abs(x)
        cdf_upper = self.standardized_CDF((0.5 - x) / scale)
        cdf_lower = self.standardized_CDF(-(0.5 + x) / scale)
        likelihood_ = cdf_upper - cdf_lower
        likelihood_ = lower_bound_toward(likelihood_, self.min_likelihood)
        return likelihood_


class Hyperprior(CodingModel):
    def __init__(
        self,
        bottleneck_capacity=220,
        hyperlatent_filters=LARGE_HYPERLATENT_FILTERS,
        mode="large",
        likelihood_type="gaussian",
        scale_lower_bound=MIN_SCALE,
    ):
        super().__init__(n_channels=bottleneck_capacity)
        self.bottleneck_capacity = bottleneck_capacity
        self.scale_lower_bound = scale_lower_bound
        self.analysis_net = HyperpriorAnalysis(C=bottleneck_capacity, N=hyperlatent_filters)
        self.synthesis_mu = HyperpriorSynthesis(C=bottleneck_capacity, N=hyperlatent_filters)
        self.synthesis_std = HyperpriorSynthesis(C=bottleneck_capacity, N=hyperlatent_filters)
        self.amortization_models = [self.analysis_net, self.synthesis_mu, self.synthesis_std]
        self.hyperlatent_likelihood = HyperpriorDensity(n_channels=hyperlatent_filters)
        if likelihood_type == "gaussian":
            self.standardized_CDF = standardized_CDF_gaussian
        elif likelihood_type == "logistic":
            self.standardized_CDF = standardized_CDF_logistic
        else:
            raise ValueError(f"Unknown likelihood model: {likelihood_type}")

    def forward(self, latents, spatial_shape, **kwargs):
        """The evaluation branch of ``Hyperprior.forward`` (``self.training`` False)."""
        hyperlatents = self.analysis_net(latents)
        quantized_hyperlatents = self._quantize(hyperlatents, mode="quantize")
        quantized_hyperlatent_likelihood = self.hyperlatent_likelihood(quantized_hyperlatents)
        _, quantized_hyperlatent_bpp = self._estimate_entropy(
            quantized_hyperlatent_likelihood, spatial_shape
        )
        hyperlatents_decoded = quantized_hyperlatents
        latent_means = self.synthesis_mu(hyperlatents_decoded)
        latent_scales = self.synthesis_std(hyperlatents_decoded)
        latent_scales = lower_bound_toward(latent_scales, self.scale_lower_bound)
        quantized_latents = self._quantize(latents, mode="quantize", means=latent_means)
        quantized_latent_likelihood = self.latent_likelihood(
            quantized_latents, mean=latent_means, scale=latent_scales
        )
        _, quantized_latent_bpp = self._estimate_entropy(quantized_latent_likelihood, spatial_shape)
        latents_decoded = self.quantize_latents_st(latents, latent_means)
        return latents_decoded, quantized_latent_bpp + quantized_hyperlatent_bpp

    def compress_forward(self, latents, spatial_shape, **kwargs):
        """``compress_forward`` without the ANS coder: the estimated bits and the symbols."""
        hyperlatents = self.analysis_net(latents)
        # HyperpriorEntropyModel._estimate_compression_bits
        likelihood = self.hyperlatent_likelihood.likelihood(quantize_st(hyperlatents))
        hyperlatent_bits, _, _ = _estimate_compression_bits(likelihood, spatial_shape)
        # HyperpriorEntropyModel.compress: symbols floor(z + 0.5), decoded as they are
        hyperlatents_decoded = torch.floor(hyperlatents + 0.5).to(torch.int32).to(latents)
        latent_means = self.synthesis_mu(hyperlatents_decoded)
        latent_scales = self.synthesis_std(hyperlatents_decoded)
        latent_scales = lower_bound_toward(latent_scales, self.scale_lower_bound)
        # PriorEntropyModel.compress: symbols floor(y + 0.5 - mean)
        symbols = torch.floor(latents + 0.5 - latent_means).to(torch.int32)
        # PriorEntropyModel._estimate_compression_bits (PriorDensity.likelihood)
        quantized = quantize_st(latents, offsets=latent_means)
        likelihood = self.latent_likelihood(quantized, latent_means, latent_scales)
        latent_bits, _, _ = _estimate_compression_bits(likelihood, spatial_shape)
        return {
            "symbols": symbols,
            "hyperlatents_decoded": hyperlatents_decoded,
            "hyperlatent_bits": hyperlatent_bits.item(),
            "latent_bits": latent_bits.item(),
            "total_bits": (hyperlatent_bits + latent_bits).item(),
        }

    def decompress_forward(self, compression_output):
        hyperlatents_decoded = compression_output["hyperlatents_decoded"]
        latent_means = self.synthesis_mu(hyperlatents_decoded)
        # PriorEntropyModel.decompress -> dequantize(symbols, offsets=means)
        symbols = compression_output["symbols"].to(torch.float32)
        return symbols.type_as(latent_means) + latent_means


# --- src/model.py (evaluation mode) ----------------------------------------------------------


class Model(nn.Module):
    def __init__(self, args, encoder_filters=(60, 120, 240, 480, 960), hyper_filters=320):
        super().__init__()
        self.args = args
        self.image_dims = self.args.image_dims
        self.batch_size = self.args.batch_size
        self.Encoder = Encoder(
            self.image_dims,
            self.batch_size,
            C=self.args.latent_channels,
            channel_norm=self.args.use_channel_norm,
            filters=encoder_filters,
        )
        self.Generator = Generator(
            self.image_dims,
            self.batch_size,
            C=self.args.latent_channels,
            n_residual_blocks=self.args.n_residual_blocks,
            channel_norm=self.args.use_channel_norm,
            sample_noise=self.args.sample_noise,
            noise_dim=self.args.noise_dim,
            filters=tuple(encoder_filters[::-1]),
        )
        self.Hyperprior = Hyperprior(
            bottleneck_capacity=self.args.latent_channels,
            hyperlatent_filters=hyper_filters,
            likelihood_type=self.args.likelihood_type,
        )

    def compression_forward(self, x):
        image_dims = tuple(x.size()[1:])
        factor = 2**self.Encoder.n_downsampling_layers
        x = pad_factor(x, x.size()[2:], factor)
        y = self.Encoder(x)
        factor = 2**self.Hyperprior.analysis_net.n_downsampling_layers
        y = pad_factor(y, y.size()[2:], factor)
        latents_quantized, total_qbpp = self.Hyperprior(y, spatial_shape=x.size()[2:])
        reconstruction = self.Generator(latents_quantized)
        if self.args.normalize_input_image is True:
            reconstruction = torch.tanh(reconstruction)
        reconstruction = reconstruction[:, :, : image_dims[1], : image_dims[2]]
        return reconstruction, total_qbpp

    def forward(self, x):
        """``Model.forward`` in evaluation mode (``compress.py --reconstruct``)."""
        reconstruction, q_bpp = self.compression_forward(x)
        if self.args.normalize_input_image is True:
            reconstruction = (reconstruction + 1.0) / 2.0
        reconstruction = torch.clamp(reconstruction, min=0.0, max=1.0)
        return reconstruction, q_bpp

    def compress(self, x):
        spatial_shape = tuple(x.size()[2:])
        factor = 2**self.Encoder.n_downsampling_layers
        x = pad_factor(x, x.size()[2:], factor)
        y = self.Encoder(x)
        factor = 2**self.Hyperprior.analysis_net.n_downsampling_layers
        y = pad_factor(y, y.size()[2:], factor)
        output = self.Hyperprior.compress_forward(y, spatial_shape)
        output["spatial_shape"] = spatial_shape
        return output

    def decompress(self, compression_output):
        latents_decoded = self.Hyperprior.decompress_forward(compression_output)
        reconstruction = self.Generator(latents_decoded)
        if self.args.normalize_input_image is True:
            reconstruction = torch.tanh(reconstruction)
        image_dims = compression_output["spatial_shape"]
        reconstruction = reconstruction[:, :, : image_dims[0], : image_dims[1]]
        if self.args.normalize_input_image is True:
            reconstruction = (reconstruction + 1.0) / 2.0
        reconstruction = torch.clamp(reconstruction, min=0.0, max=1.0)
        return reconstruction


def to_input(image: np.ndarray, normalize: bool) -> torch.Tensor:
    """The evaluation loader's tensor: ``ToTensor`` (then ``Normalize(0.5, 0.5)`` with
    ``-norm``)."""
    x = torch.from_numpy(image).permute(2, 0, 1)[None].float() / 255.0
    return (x - 0.5) / 0.5 if normalize else x


# --- random weights in the release's checkpoint layout ---------------------------------------

#: Widths small enough for a unit test (the release: 60..960, 320, 220 channels, 9 blocks).
SMALL = dict(encoder_filters=(6, 8, 10, 12, 16), hyper_filters=12)


def release_args(**overrides) -> dict:
    """``args`` as ``save_model`` writes it: ``default_config.hific_args`` with the command
    line's options over it (a plain dict, every value JSON-able)."""
    args = dict(
        name="openimages_compression_gan_2020_08_21_12:00",
        silent=True,
        n_epochs=8,
        n_steps=1000000,
        batch_size=8,
        log_interval=1000,
        save_interval=50000,
        gpu=0,
        multigpu=False,
        dataset="openimages",
        dataset_path="data/openimages",
        shuffle=True,
        discriminator_steps=1,
        model_mode="training",
        model_type="compression_gan",
        gan_loss_type="non_saturating",
        sample_noise=False,
        noise_dim=32,
        latent_channels=220,
        n_residual_blocks=9,
        lambda_B=2**-4,
        k_M=0.075 * 2**-5,
        k_P=1.0,
        beta=0.15,
        use_channel_norm=True,
        likelihood_type="gaussian",
        normalize_input_image=False,
        crop_size=256,
        image_dims=(3, 256, 256),
        latent_dims=(220, 16, 16),
        learning_rate=1e-4,
        weight_decay=1e-6,
        lambda_schedule=dict(vals=[2.0, 1.0], steps=[50000]),
        lr_schedule=dict(vals=[1.0, 0.1], steps=[500000]),
        target_schedule=dict(vals=[0.20 / 0.14, 1.0], steps=[50000]),
        ignore_schedule=False,
        regime="low",
        target_rate_map=dict(low=0.14, med=0.3, high=0.45),
        lambda_A_map=dict(low=2**1, med=2**0, high=2 ** (-1)),
        target_rate=0.14,
        lambda_A=2,
        use_latent_mixture_model=False,
        mixture_components=4,
        latent_channels_DLMM=64,
        warmstart=True,
        warmstart_ckpt="experiments/base/checkpoints/base.pt",
        timestamp="2020_08_21_12:00",
    )
    args.update(overrides)
    return args


def randomize(module: nn.Module, seed: int) -> nn.Module:
    """Every tensor drawn from ``seed``, scaled so activations stay of order one (the
    density's matrices near the release's initial value, its gates and biases small)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in sorted(module.state_dict().items()):
            leaf = name.rsplit(".", 1)[-1]
            if leaf == "gamma":
                values = 0.8 + 0.4 * torch.rand(tensor.shape, generator=gen)
            elif leaf in ("beta", "bias") or leaf[:2] in ("a_", "b_"):
                values = 0.1 * torch.randn(tensor.shape, generator=gen)
            elif leaf.startswith("H_"):
                values = tensor + 0.3 * torch.randn(tensor.shape, generator=gen)
            else:
                values = torch.randn(tensor.shape, generator=gen) / tensor[0].numel() ** 0.5
                if name == "Encoder.conv_block_out.1.weight":
                    values = values * 4.0  # latents over several integers: rounding matters
            tensor.copy_(values)
    return module.eval()


def random_model(seed: int, args: dict, **widths) -> Model:
    return randomize(Model(Struct(**args), **widths), seed)


def save_release(model: Model, path: Path, args: dict) -> Path:
    """As ``utils.save_model``: the training model's state dict (here with stand-ins for the
    discriminator's and LPIPS's tensors, which training mode also holds), the optimizers'
    states, the epoch and step, and ``args``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    state = dict(model.state_dict())
    state["Discriminator.conv1.weight"] = torch.zeros(4, 3, 3, 3)
    state["perceptual_loss.net.lin0.model.1.weight"] = torch.zeros(1, 64, 1, 1)
    param = torch.nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.Adam([param]).state_dict()
    torch.save(
        {
            "model_state_dict": state,
            "compression_optimizer_state_dict": optimizer,
            "hyperprior_optimizer_state_dict": optimizer,
            "epoch": 3,
            "steps": 1000,
            "args": args,
            "discriminator_state_dict": {"conv1.weight": torch.zeros(4, 3, 3, 3)},
        },
        path,
    )
    return path
