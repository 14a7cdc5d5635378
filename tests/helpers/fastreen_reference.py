"""A test-side restatement of the bi-layer neural avatar release (saic-violet/bilayer-model,
Zakharov et al. ECCV 2020) and of the Graphonomy parser it bundles, written from reading them.

It exists only to check fairforge's ``fastreen`` official backend. The modules keep the
release's class and attribute names, order of operations and quirks: ``networks/utils.py``'s
residual block, adaptive convolutions and norms; the five ``NetworkWrapper`` s with their
projectors and ``assign_adaptive_params`` (parameters handed out in module visiting order);
spectral normalisation applied to every Conv2d and Linear before loading and removed after,
as ``RunnerWrapper`` and ``InferenceWrapper`` do; ``draw_stickmen``'s 68-point drawing;
``InferenceWrapper.preprocess_data``'s crop (PIL) with the landmarks given instead of
face-alignment's; the texture enhancer's unrolled gradient steps; Graphonomy's
DeepLab-Xception with its in-place ReLUs, the transfer graph head (``_savemem`` projection
model) and ``load_source_model``'s key renaming, and ``SegmentationWrapper``'s erosion. Only
what runs on the CPU is restated (the release moves the adjacency to CUDA unconditionally).

The arguments are an ``args.txt`` namespace (:func:`args_namespace`); the released values are
the training scripts', and ``inf_pred_source_data`` and ``pse_emb_source_pose`` are on because
the texture enhancer reads the source's predictions. :func:`random_release` writes an
``args.txt``, the five checkpoints (spectral-norm keys) and Graphonomy's weights with random
values in the release's layout and returns the ``fastreen`` official options.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from types import SimpleNamespace

import cv2
import networkx as nx
import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn
from torch.nn.utils.spectral_norm import SpectralNorm
from torchvision import transforms

from fairforge.forgery.nets.graphonomy import CIHP2PASCAL_NLP, CIHP_GRAPH, PASCAL_GRAPH
from official_support import empty, random_state

# --- networks/utils.py ---------------------------------------------------------------------


class AdaptiveConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=1):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, inputs):
        if self.weight.shape[0] != inputs.shape[0]:
            b = self.weight.shape[0]
            t = inputs.shape[0] // b
            weight = (
                self.weight[:, None].repeat(1, t, 1, 1, 1, 1).view(b * t, *self.weight.shape[1:])
            )
            bias = self.bias[:, None].repeat(1, t, 1).view(b * t, self.bias.shape[1])
        else:
            weight = self.weight
            bias = self.bias
        if self.kernel_size > 1:
            outputs = []
            for i in range(inputs.shape[0]):
                outputs.append(
                    F.conv2d(inputs[i : i + 1], weight[i], bias[i], self.stride, self.padding)
                )
            return torch.cat(outputs, 0)
        b, c, h, w = inputs.shape
        weight = weight[:, :, :, 0, 0].transpose(1, 2)
        outputs = (
            torch.bmm(inputs.view(b, c, -1).transpose(1, 2), weight)
            .transpose(1, 2)
            .view(b, -1, h, w)
        )
        return outputs + bias[..., None, None]


class AdaptiveNorm2d(nn.Module):
    def __init__(self, num_features, spatial_size, norm_layer_type, eps=1e-4):
        super().__init__()
        self.num_features = num_features
        self.spatial_size = spatial_size
        self.norm_layer_type = norm_layer_type
        if "spade" in self.norm_layer_type:
            self.pixel_feats = nn.Parameter(
                torch.empty(1, num_features, spatial_size, spatial_size)
            )
            self.conv_weight = AdaptiveConv2d(num_features, num_features, 1, 1, 0)
            self.conv_bias = AdaptiveConv2d(num_features, num_features, 1, 1, 0)
        norm_layers = {
            "bn": lambda n: nn.BatchNorm2d(n, eps=eps, affine=False),
            "in": lambda n: nn.InstanceNorm2d(n, eps=eps, affine=False),
            "none": lambda n: nn.Identity(),
        }
        self.norm_layer = norm_layers[self.norm_layer_type.replace("spade_", "")](num_features)

    def forward(self, inputs):
        outputs = self.norm_layer(inputs)
        if "spade" in self.norm_layer_type:
            b = self.conv_weight.weight.shape[0]
            pixel_feats = torch.cat([self.pixel_feats] * b)
            self.weight = self.conv_weight(pixel_feats) + 1.0
            self.bias = self.conv_bias(pixel_feats)
        if len(self.weight.shape) == 2:
            self.weight = self.weight[..., None, None]
            self.bias = self.bias[..., None, None]
        if self.weight.shape[0] != outputs.shape[0]:
            b = self.weight.shape[0]
            n = outputs.shape[0] // b
            outputs = outputs.view(b, n, *outputs.shape[1:])
            outputs = outputs * self.weight[:, None] + self.bias[:, None]
            return outputs.view(b * n, *outputs.shape[2:])
        return outputs * self.weight + self.bias


activations = {"leakyrelu": functools.partial(nn.LeakyReLU, negative_slope=0.2)}
upsampling_layers = {"nearest": lambda stride: nn.Upsample(scale_factor=stride, mode="nearest")}
downsampling_layers = {"avgpool": nn.AvgPool2d}
norm_layers = {
    "none": nn.Identity,
    "bn": lambda num_features, spatial_size, eps: nn.BatchNorm2d(num_features, eps, affine=True),
    "ada_bn": functools.partial(AdaptiveNorm2d, norm_layer_type="bn"),
    "ada_spade_bn": functools.partial(AdaptiveNorm2d, norm_layer_type="spade_bn"),
}
skip_layers = {"conv": nn.Conv2d, "ada_conv": AdaptiveConv2d}


class ResBlock(nn.Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size=3,
        stride=1,
        padding=1,
        eps=1e-4,
        spatial_size=1,
        activation_type="relu",
        norm_layer_type="none",
        resize_layer_type="none",
        skip_layer_type="conv",
        efficient_upsampling=False,
        first_norm_is_not_adaptive=False,
        return_feats=False,
        frames_per_person=1,
        output_aggregated=False,
    ):
        super().__init__()
        self.return_feats = return_feats
        self.num_frames = frames_per_person
        self.output_aggregated = output_aggregated
        normalize = norm_layer_type != "none"
        upsample = resize_layer_type in upsampling_layers
        downsample = resize_layer_type in downsampling_layers
        activation = activations[activation_type]
        if normalize:
            first = norm_layer_type
            if first_norm_is_not_adaptive:
                first = norm_layer_type.replace("ada_", "").replace("spade_", "")
            norm_layer_1 = norm_layers[first]
            norm_layer_2 = norm_layers[norm_layer_type]
        if upsample:
            resize_layer = upsampling_layers[resize_layer_type]
        if downsample:
            resize_layer = downsampling_layers[resize_layer_type]
        skip_layer = skip_layers[skip_layer_type]

        layers = []
        if normalize:
            layers += [norm_layer_1(in_channels, spatial_size, eps=eps)]
        layers += [activation(inplace=normalize)]
        if upsample and not efficient_upsampling:
            layers += [resize_layer(stride)]
            if spatial_size != 1:
                spatial_size *= 2
        layers += [nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding, bias=True)]
        if normalize:
            layers += [norm_layer_2(out_channels, spatial_size, eps=eps)]
        layers += [activation(inplace=True)]
        self.block_feats = nn.Sequential(*layers)

        layers = []
        if upsample and efficient_upsampling:
            layers += [resize_layer(stride)]
            if spatial_size != 1:
                spatial_size *= 2
        layers += [nn.Conv2d(out_channels, out_channels, kernel_size, padding=padding, bias=True)]
        if downsample:
            layers += [resize_layer(stride)]
        self.block = nn.Sequential(*layers)

        if in_channels != out_channels or upsample or downsample:
            layers = []
            if upsample:
                layers += [resize_layer(stride)]
            layers += [
                skip_layer(in_channels=in_channels, out_channels=out_channels, kernel_size=1)
            ]
            if downsample:
                layers += [resize_layer(stride)]
            self.skip = nn.Sequential(*layers)
        else:
            self.skip = nn.Identity()

    def forward(self, inputs):
        feats = [self.block_feats(inputs)]
        outputs_main = self.block(feats[-1])
        outputs = outputs_main + self.skip(inputs)
        if self.output_aggregated:
            n = self.num_frames
            b = outputs.shape[0] // n
            outputs = outputs.view(b, n, *outputs.shape[1:]).mean(dim=1)
        if self.return_feats:
            outputs = [outputs, feats]
        return outputs


# --- the five networks ---------------------------------------------------------------------


class Embedder(nn.Module):
    def __init__(self, args):
        super().__init__()
        num_enc_blocks = int(math.log(args.image_size // args.emb_output_tensor_size, 2))
        num_dec_blocks = int(math.log(args.image_size // args.tex_input_tensor_size, 2))
        out_channels = args.emb_num_channels
        layers = [nn.Conv2d(3 + 3 * (not args.emb_no_stickman), out_channels, 3, 1, 1)]
        for i in range(1, num_enc_blocks + 1):
            in_channels = out_channels
            out_channels = min(int(args.emb_num_channels * 2**i), args.emb_max_channels)
            layers += [
                ResBlock(
                    in_channels,
                    out_channels,
                    stride=2,
                    eps=args.eps,
                    activation_type=args.emb_activation_type,
                    norm_layer_type=args.emb_norm_layer_type,
                    resize_layer_type=args.emb_downsampling_type,
                    frames_per_person=args.num_source_frames,
                    output_aggregated=i == num_enc_blocks,
                )
            ]
        self.enc = nn.Sequential(*layers)
        layers = []
        for i in range(num_dec_blocks - 1, -1, -1):
            in_channels = out_channels
            out_channels = min(int(args.tex_num_channels * 2**i), args.tex_max_channels)
            layers += [
                ResBlock(
                    in_channels,
                    out_channels,
                    eps=args.eps,
                    activation_type=args.emb_activation_type,
                    norm_layer_type=args.emb_norm_layer_type,
                    resize_layer_type="none",
                    return_feats=True,
                )
            ]
        self.dec_blocks = nn.ModuleList(layers)

    def forward(self, inputs):
        b, n, c, h, w = inputs.shape
        outputs = self.enc(inputs.view(-1, c, h, w))
        embeds = []
        for block in self.dec_blocks:
            outputs, embeds_block = block(outputs)
            embeds += embeds_block
        if embeds[0].shape[0] == b * n:
            embeds = [e.view(b, n, *e.shape[1:]).mean(dim=1) for e in embeds]
        return embeds


class IdentityEmbedderWrapper(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.net = Embedder(args)

    def forward(self, data_dict):
        inputs = data_dict["source_imgs"]
        if self.args.emb_apply_masks:
            inputs = inputs * data_dict["source_segs"] + (-1) * (1 - data_dict["source_segs"])
        if not self.args.emb_no_stickman:
            inputs = torch.cat([inputs, data_dict["source_stickmen"]], 2)
        data_dict["source_idt_embeds"] = self.net(inputs)
        return data_dict


class PoseEmbedder(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.num_channels = args.inf_max_channels
        self.spatial_size = args.inf_input_tensor_size
        activation = activations[args.pse_activation_type]
        in_channels = args.pse_in_channels
        num_channels = args.pse_num_channels
        layers = [nn.Linear(in_channels, num_channels)]
        for _ in range(1, args.pse_num_blocks - 1):
            layers += [activation(inplace=True), nn.Linear(num_channels, num_channels)]
        layers += [
            activation(inplace=True),
            nn.Linear(num_channels, self.num_channels * self.spatial_size**2),
        ]
        self.mlp = nn.Sequential(*layers)

    def forward(self, inputs):
        pose_embeds = self.mlp(inputs)
        return pose_embeds.view(-1, self.num_channels, self.spatial_size, self.spatial_size)


class KeypointsEmbedderWrapper(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.net = PoseEmbedder(args)

    def forward(self, data_dict):
        target_poses = data_dict["target_poses"]
        b, t = target_poses.shape[:2]
        target_embeds = self.net(target_poses.view(b * t, -1))
        if self.args.pse_emb_source_pose:
            source_poses = data_dict["source_poses"]
            n = source_poses.shape[1]
            source_embeds = self.net(source_poses.view(b * n, -1))
            data_dict["source_pose_embeds"] = source_embeds.view(b, n, *source_embeds.shape[1:])
        data_dict["target_pose_embeds"] = target_embeds.view(b, t, *target_embeds.shape[1:])
        return data_dict


class Projector(nn.Module):
    """The texture (``prefix='tex'``) and inference (``'inf'``) generators' projectors."""

    def __init__(self, args, prefix, bottleneck_size=1024):
        super().__init__()
        num = getattr(args, f"{prefix}_num_channels")
        top = getattr(args, f"{prefix}_max_channels")
        norm = getattr(args, f"{prefix}_norm_layer_type")
        num_blocks = int(
            math.log(args.image_size // getattr(args, f"{prefix}_input_tensor_size"), 2)
        )
        self.channel_mults = []
        self.avgpools = nn.ModuleList()
        self.fc_blocks = nn.ModuleList()
        for i in range(num_blocks, 0, -1):
            in_channels = min(int(args.emb_num_channels * 2**i), args.emb_max_channels)
            out_in_channels = min(int(num * 2**i), top)
            out_channels = min(int(num * 2 ** (i - 1)), top)
            channel_mult = out_in_channels / float(in_channels)
            self.channel_mults += [channel_mult]
            s = int(bottleneck_size**0.5 * channel_mult)
            self.avgpools += [nn.AdaptiveAvgPool2d((s, s))]
            self.fc_blocks += [nn.ModuleList()]

            def fc(outputs, s=s, channel_mult=channel_mult, in_channels=in_channels):
                return nn.Sequential(
                    nn.Linear(int(s**2 / channel_mult), in_channels),
                    nn.Linear(in_channels, in_channels),
                    nn.Linear(in_channels, outputs),
                )

            if prefix == "tex":  # ada_spade norms, ada_conv skip
                self.fc_blocks[-1] += [fc(out_channels + 1), fc(out_channels + 1)]
                self.fc_blocks[-1] += [fc(out_in_channels + 1)]
                self.fc_blocks[-1] += [fc(out_channels + 1), fc(out_channels + 1)]
            else:  # ada norms, ada_conv skip
                assert "ada" in norm
                self.fc_blocks[-1] += [fc(2)]
                self.fc_blocks[-1] += [fc(out_in_channels + 1)]
                self.fc_blocks[-1] += [fc(2)]

    def forward(self, embeds):
        weights, biases = [], []
        for embed, fc_block, channel_mult, avgpool in zip(
            embeds, self.fc_blocks, self.channel_mults, self.avgpools
        ):
            b, c, h, w = embed.shape
            embed = avgpool(embed)
            c_out = int(c * channel_mult)
            embed = embed.view(b * c_out, -1)
            for fc in fc_block:
                params = fc(embed).view(b, c_out, -1)
                weight = params[:, :, :-1].squeeze()
                if weight.shape[0] != b and len(weight.shape) > 1 or len(weight.shape) > 2:
                    weight = weight[..., None, None]
                bias = params[:, :, -1].squeeze()
                if b == 1:
                    weight = weight[None]
                    bias = bias[None]
                weights += [weight]
                biases += [bias]
        return weights, biases


class Generator(nn.Module):
    """The texture (``'tex'``) and inference (``'inf'``) generators."""

    def __init__(self, args, prefix):
        super().__init__()
        num = getattr(args, f"{prefix}_num_channels")
        top = getattr(args, f"{prefix}_max_channels")
        norm = getattr(args, f"{prefix}_norm_layer_type")
        size = getattr(args, f"{prefix}_input_tensor_size")
        num_blocks = int(math.log(args.image_size // size, 2))
        out_channels = min(int(num * 2**num_blocks), top)
        spatial_size = size if prefix == "tex" and "spade" in norm else 1
        layers = []
        for i in range(num_blocks - 1, -1, -1):
            in_channels = out_channels
            out_channels = min(int(num * 2**i), top)
            layers += [
                ResBlock(
                    in_channels,
                    out_channels,
                    stride=2,
                    eps=args.eps,
                    spatial_size=spatial_size,
                    activation_type=getattr(args, f"{prefix}_activation_type"),
                    norm_layer_type=norm,
                    resize_layer_type=getattr(args, f"{prefix}_upsampling_type"),
                    skip_layer_type=getattr(args, f"{prefix}_skip_layer_type"),
                    efficient_upsampling=prefix == "inf",
                    first_norm_is_not_adaptive=i == num_blocks - 1,
                )
            ]
            if prefix == "tex" and "spade" in norm:
                spatial_size *= 2
        layers += [
            norm_layers[norm](out_channels, spatial_size, eps=args.eps),
            activations[getattr(args, f"{prefix}_activation_type")](inplace=True),
        ]
        self.blocks = nn.Sequential(*layers)
        if prefix == "tex":
            heads = [(3, nn.Tanh)]
        else:
            heads = [(2, nn.Tanh), (3, nn.Tanh)] + (
                [(1, None)] if args.inf_pred_segmentation else []
            )
        self.heads = nn.ModuleList()
        for num_outputs, final_activation in heads:
            layers = [nn.Conv2d(out_channels, num_outputs, 3, 1, 1)]
            if final_activation is not None:
                layers += [final_activation()]
            self.heads += [nn.Sequential(*layers)]

    def forward(self, inputs):
        outputs = self.blocks(inputs).contiguous()
        return [head(outputs) for head in self.heads]


def assign_adaptive_params(net, weights, biases, spade_skipped):
    i = 0
    for m in net.modules():
        if m.__class__.__name__ == "AdaptiveNorm2d" and (
            not spade_skipped or "spade" not in m.norm_layer_type
        ):
            m.weight = weights[i] + 1.0
            m.bias = biases[i]
            i += 1
        elif m.__class__.__name__ == "AdaptiveConv2d":
            m.weight = weights[i]
            m.bias = biases[i]
            i += 1


class TextureGeneratorWrapper(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.gen_tex_input = nn.Parameter(
            torch.randn(
                1, args.tex_max_channels, args.tex_input_tensor_size, args.tex_input_tensor_size
            )
        )
        self.gen_tex = Generator(args, "tex")
        self.prj_tex = Projector(args, "tex")

    def forward(self, data_dict):
        idt_embeds = data_dict["source_idt_embeds"]
        b = idt_embeds[0].shape[0]
        tex_weights, tex_biases = self.prj_tex(idt_embeds)
        assign_adaptive_params(self.gen_tex, tex_weights, tex_biases, spade_skipped=True)
        tex_inputs = torch.cat([self.gen_tex_input] * b, dim=0)
        data_dict["pred_tex_hf_rgbs"] = self.gen_tex(tex_inputs)[0][:, None]
        return data_dict


class InferenceGeneratorWrapper(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.gen_inf = Generator(args, "inf")
        self.prj_inf = Projector(args, "inf")
        grid = torch.linspace(-1, 1, args.image_size + 1)
        grid = (grid[1:] + grid[:-1]) / 2
        v, u = torch.meshgrid(grid, grid, indexing="ij")
        self.register_buffer("identity_grid", torch.stack([u, v], 2)[None])

    def forward(self, data_dict):
        idt_embeds = data_dict["source_idt_embeds"]
        target_pose_embeds = data_dict["target_pose_embeds"]
        pred_tex_hf_rgbs = data_dict["pred_tex_hf_rgbs"][:, 0]
        b, t = target_pose_embeds.shape[:2]
        target_pose_embeds = target_pose_embeds.view(b * t, *target_pose_embeds.shape[2:])
        if self.args.inf_pred_source_data:
            source_pose_embeds = data_dict["source_pose_embeds"]
            n = source_pose_embeds.shape[1]
            source_pose_embeds = source_pose_embeds.view(b * n, *source_pose_embeds.shape[2:])
        inf_weights, inf_biases = self.prj_inf(idt_embeds)
        assign_adaptive_params(self.gen_inf, inf_weights, inf_biases, spade_skipped=False)
        outputs = self.gen_inf(target_pose_embeds)
        pred_target_uvs = self.identity_grid + outputs[0].permute(0, 2, 3, 1)
        pred_target_delta_lf_rgbs = outputs[1]
        pred_target_segs = torch.sigmoid(outputs[2])
        if self.args.inf_pred_source_data:
            outputs = self.gen_inf(source_pose_embeds)
            pred_source_uvs = self.identity_grid + outputs[0].permute(0, 2, 3, 1)
            pred_source_delta_lf_rgbs = outputs[1]
            pred_source_segs = torch.sigmoid(outputs[2])
        tex = torch.cat([pred_tex_hf_rgbs[:, None]] * t, dim=1).view(
            b * t, *pred_tex_hf_rgbs.shape[1:]
        )
        pred_target_delta_hf_rgbs = F.grid_sample(tex, pred_target_uvs, align_corners=False)
        pred_target_imgs = pred_target_delta_lf_rgbs + pred_target_delta_hf_rgbs

        def target(data):
            return data.view(b, t, *data.shape[1:])

        data_dict["pred_target_imgs"] = target(pred_target_imgs)
        data_dict["pred_target_segs"] = target(pred_target_segs)
        data_dict["pred_target_uvs"] = target(pred_target_uvs)
        data_dict["pred_target_delta_lf_rgbs"] = target(pred_target_delta_lf_rgbs)
        data_dict["pred_target_delta_hf_rgbs"] = target(pred_target_delta_hf_rgbs)
        if self.args.inf_pred_source_data:
            data_dict["pred_source_uvs"] = pred_source_uvs.view(b, n, *pred_source_uvs.shape[1:])
            data_dict["pred_source_delta_lf_rgbs"] = pred_source_delta_lf_rgbs.view(
                b, n, *pred_source_delta_lf_rgbs.shape[1:]
            )
            data_dict["pred_source_segs"] = pred_source_segs.view(b, n, *pred_source_segs.shape[1:])
        return data_dict


class EnhancerGenerator(nn.Module):
    def __init__(self, args):
        super().__init__()
        num_down_blocks = int(math.log(args.image_size // args.enh_bottleneck_tensor_size, 2))
        out_channels = args.enh_num_channels
        layers = [nn.Conv2d(6, out_channels, 3, 1, 1)]
        for i in range(1, num_down_blocks + 1):
            in_channels = out_channels
            out_channels = min(int(args.enh_num_channels * 2**i), args.enh_max_channels)
            layers += [
                ResBlock(
                    in_channels,
                    out_channels,
                    stride=2,
                    eps=args.eps,
                    activation_type=args.enh_activation_type,
                    norm_layer_type=args.enh_norm_layer_type,
                    resize_layer_type=args.enh_downsampling_type,
                )
            ]
        for i in range(args.enh_num_blocks):
            layers += [
                ResBlock(
                    out_channels,
                    out_channels,
                    eps=args.eps,
                    activation_type=args.enh_activation_type,
                    norm_layer_type=args.enh_norm_layer_type,
                    resize_layer_type="none",
                    frames_per_person=args.num_source_frames,
                    output_aggregated=i == args.enh_num_blocks - 1,
                )
            ]
        for i in range(num_down_blocks - 1, -1, -1):
            in_channels = out_channels
            out_channels = min(int(args.enh_num_channels * 2**i), args.enh_max_channels)
            layers += [
                ResBlock(
                    in_channels,
                    out_channels,
                    stride=2,
                    eps=args.eps,
                    activation_type=args.enh_activation_type,
                    norm_layer_type=args.enh_norm_layer_type,
                    resize_layer_type=args.enh_upsampling_type,
                )
            ]
        layers += [
            norm_layers[args.enh_norm_layer_type](3),
            activations[args.enh_activation_type](inplace=True),
            nn.Conv2d(out_channels, 3, 3, 1, 1),
        ]
        self.blocks = nn.Sequential(*layers)

    def forward(self, inputs):
        return self.blocks(inputs)


class TextureEnhancerWrapper(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.net = EnhancerGenerator(args)
        self.rgb_loss = lambda fake, real: ((real - fake) ** 2).sum() / 2  # 'sse'

    def forward(self, data_dict):
        source_uvs = data_dict["pred_source_uvs"]
        source_delta_lf_rgbs = data_dict["pred_source_delta_lf_rgbs"]
        source_imgs = data_dict["source_imgs"]
        enh_tex_hf_rgbs = data_dict["pred_tex_hf_rgbs"].clone()
        target_uvs = data_dict["pred_target_uvs"]
        pred_target_delta_lf_rgbs = data_dict["pred_target_delta_lf_rgbs"]
        pred_source_segs = data_dict["pred_source_segs"]
        b, t, c, h, w = pred_target_delta_lf_rgbs.shape
        n = source_uvs.shape[1]
        source_uvs = source_uvs.view(b * n, h, w, 2).detach()
        source_delta_lf_rgbs = source_delta_lf_rgbs.view(b * n, c, h, w).detach()
        source_imgs = source_imgs.view(b * n, c, h, w)
        enh_tex_hf_rgbs = enh_tex_hf_rgbs[:, 0].detach()
        target_uvs = target_uvs.view(b * t, h, w, 2).detach()
        pred_target_delta_lf_rgbs = pred_target_delta_lf_rgbs.view(b * t, c, h, w).detach()
        pred_source_segs = pred_source_segs.view(b * n, 1, h, w)
        source_imgs = source_imgs * pred_source_segs + (-1) * (1 - pred_source_segs)
        pred_source_segs = pred_source_segs.detach()
        for _ in range(self.args.enh_unrolling_depth):
            prev_enh = torch.is_grad_enabled()
            torch.set_grad_enabled(True)
            enh_i = torch.cat([enh_tex_hf_rgbs[:, None]] * n, dim=1).view(
                b * n, *enh_tex_hf_rgbs.shape[1:]
            )
            enh_i_grad = enh_i.clone().detach()
            enh_i_grad.requires_grad = True
            pred_source_imgs = source_delta_lf_rgbs.detach() + F.grid_sample(
                enh_i_grad, source_uvs.detach(), align_corners=False
            )
            pred_source_imgs = pred_source_imgs * pred_source_segs + (-1) * (1 - pred_source_segs)
            loss_enh = self.rgb_loss(pred_source_imgs, source_imgs.detach())
            loss_enh.backward()
            inputs = torch.cat([enh_i, enh_i_grad.grad.detach()], dim=1)
            torch.set_grad_enabled(prev_enh)
            outputs = self.net(inputs)
            delta = torch.tanh(outputs[:, :3])
            if delta.shape[0] == b * n:
                delta = delta.view(b, n, *delta.shape[1:]).mean(dim=1)
            enh_tex_hf_rgbs = enh_tex_hf_rgbs + delta
        enh = torch.cat([enh_tex_hf_rgbs[:, None]] * t, 1).view(b * t, *enh_tex_hf_rgbs.shape[1:])
        pred_enh_target_delta_hf_rgbs = F.grid_sample(enh, target_uvs, align_corners=False)
        pred_enh_target_imgs = pred_target_delta_lf_rgbs + pred_enh_target_delta_hf_rgbs
        data_dict["pred_enh_tex_hf_rgbs"] = enh.view(b, t, *enh.shape[1:])
        data_dict["pred_enh_target_imgs"] = pred_enh_target_imgs.view(
            b, t, *pred_enh_target_imgs.shape[1:]
        )
        return data_dict


NETWORKS = {
    "identity_embedder": IdentityEmbedderWrapper,
    "texture_generator": TextureGeneratorWrapper,
    "keypoints_embedder": KeypointsEmbedderWrapper,
    "inference_generator": InferenceGeneratorWrapper,
    "texture_enhancer": TextureEnhancerWrapper,
}
NETWORKS_TEST = list(NETWORKS)  # the enhancer experiment's networks_test, in order

# --- runners/utils.py ----------------------------------------------------------------------


def spectral_norm(module, name="weight", apply_to=("conv2d", "linear"), eps=1e-12):
    module_name = module.__class__.__name__.lower()
    if module_name not in apply_to or "adaptive" in module_name:
        return module
    dim = 1 if isinstance(module, nn.ConvTranspose2d) else 0
    SpectralNorm.apply(module, name, 1, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            break
    return module


# --- datasets/utils.py: draw_stickmen, 68 keypoints ------------------------------------------

EDGES_PARTS = [
    list(range(0, 17)),
    list(range(17, 22)),
    list(range(22, 27)),
    list(range(27, 31)) + [30, 33],
    list(range(31, 36)),
    list(range(36, 42)),
    list(range(42, 48)),
    list(range(48, 60)),
    list(range(60, 68)),
]
CLOSED_PARTS = [False, False, False, False, False, True, True, True, True]
COLORS_PARTS = [
    (255, 255, 255),
    (255, 0, 0),
    (0, 255, 0),
    (0, 0, 255),
    (0, 0, 255),
    (255, 0, 255),
    (0, 255, 255),
    (255, 255, 0),
    (255, 255, 0),
]


def draw_stickmen(args, poses):
    stickmen = []
    for pose in poses:
        xy = (pose.view(-1, 2).cpu().numpy() + 1) / 2 * args.image_size
        xy = xy[None, :, None].astype(np.int32)
        stickman = np.ones((args.image_size, args.image_size, 3), np.uint8)
        for edges, closed, color in zip(EDGES_PARTS, CLOSED_PARTS, COLORS_PARTS):
            stickman = cv2.polylines(
                stickman, xy[:, edges], closed, color, thickness=args.stickmen_thickness
            )
        stickmen.append(torch.FloatTensor(stickman.transpose(2, 0, 1)) / 255.0)
    return (torch.stack(stickmen) - 0.5) * 2.0


# --- external/Graphonomy -------------------------------------------------------------------


class SeparableConv2d_aspp(nn.Module):
    def __init__(
        self, inplanes, planes, kernel_size=3, stride=1, dilation=1, bias=False, padding=0
    ):
        super().__init__()
        self.depthwise = nn.Conv2d(
            inplanes, inplanes, kernel_size, stride, padding, dilation, groups=inplanes, bias=bias
        )
        self.depthwise_bn = nn.BatchNorm2d(inplanes)
        self.pointwise = nn.Conv2d(inplanes, planes, 1, 1, 0, 1, 1, bias=bias)
        self.pointwise_bn = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = self.relu(self.depthwise_bn(self.depthwise(x)))
        return self.relu(self.pointwise_bn(self.pointwise(x)))


def fixed_padding(inputs, kernel_size, rate):
    kernel_size_effective = kernel_size + (kernel_size - 1) * (rate - 1)
    pad_total = kernel_size_effective - 1
    pad_beg = pad_total // 2
    pad_end = pad_total - pad_beg
    return F.pad(inputs, (pad_beg, pad_end, pad_beg, pad_end))


class SeparableConv2d_same(nn.Module):
    def __init__(
        self, inplanes, planes, kernel_size=3, stride=1, dilation=1, bias=False, padding=0
    ):
        super().__init__()
        self.depthwise = nn.Conv2d(
            inplanes, inplanes, kernel_size, stride, padding, dilation, groups=inplanes, bias=bias
        )
        self.depthwise_bn = nn.BatchNorm2d(inplanes)
        self.pointwise = nn.Conv2d(inplanes, planes, 1, 1, 0, 1, 1, bias=bias)
        self.pointwise_bn = nn.BatchNorm2d(planes)

    def forward(self, x):
        x = fixed_padding(x, self.depthwise.kernel_size[0], rate=self.depthwise.dilation[0])
        x = self.depthwise_bn(self.depthwise(x))
        return self.pointwise_bn(self.pointwise(x))


class Decoder_module(nn.Module):
    def __init__(self, inplanes, planes, rate=1):
        super().__init__()
        self.atrous_convolution = SeparableConv2d_aspp(
            inplanes, planes, 3, stride=1, dilation=rate, padding=1
        )

    def forward(self, x):
        return self.atrous_convolution(x)


class ASPP_module(nn.Module):
    def __init__(self, inplanes, planes, rate):
        super().__init__()
        self.atrous_convolution = SeparableConv2d_aspp(
            inplanes, planes, 3, stride=1, dilation=rate, padding=rate
        )

    def forward(self, x):
        return self.atrous_convolution(x)


class ASPP_module_rate0(nn.Module):
    def __init__(self, inplanes, planes, rate=1):
        super().__init__()
        self.atrous_convolution = nn.Conv2d(
            inplanes, planes, 1, stride=1, padding=0, dilation=rate, bias=False
        )
        self.bn = nn.BatchNorm2d(planes, eps=1e-5, affine=True)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.bn(self.atrous_convolution(x)))


class Block(nn.Module):
    def __init__(
        self,
        inplanes,
        planes,
        reps,
        stride=1,
        dilation=1,
        start_with_relu=True,
        grow_first=True,
        is_last=False,
    ):
        super().__init__()
        if planes != inplanes or stride != 1:
            self.skip = nn.Conv2d(inplanes, planes, 1, stride=2, bias=False)
            if is_last:
                self.skip = nn.Conv2d(inplanes, planes, 1, stride=1, bias=False)
            self.skipbn = nn.BatchNorm2d(planes)
        else:
            self.skip = None
        self.relu = nn.ReLU(inplace=True)
        rep = []
        filters = inplanes
        if grow_first:
            rep.append(self.relu)
            rep.append(SeparableConv2d_same(inplanes, planes, 3, stride=1, dilation=dilation))
            filters = planes
        for _ in range(reps - 1):
            rep.append(self.relu)
            rep.append(SeparableConv2d_same(filters, filters, 3, stride=1, dilation=dilation))
        if not grow_first:
            rep.append(self.relu)
            rep.append(SeparableConv2d_same(inplanes, planes, 3, stride=1, dilation=dilation))
        if not start_with_relu:
            rep = rep[1:]
        if stride != 1:
            rep.append(self.relu)
            rep.append(SeparableConv2d_same(planes, planes, 3, stride=2, dilation=dilation))
        if is_last:
            rep.append(self.relu)
            rep.append(SeparableConv2d_same(planes, planes, 3, stride=1, dilation=dilation))
        self.rep = nn.Sequential(*rep)

    def forward(self, inp):
        x = self.rep(inp)  # the in-place ReLU first rectifies inp itself
        if self.skip is not None:
            skip = self.skipbn(self.skip(inp))
        else:
            skip = inp
        x += skip
        return x


class Block2(nn.Module):
    def __init__(
        self,
        inplanes,
        planes,
        reps,
        stride=1,
        dilation=1,
        start_with_relu=True,
        grow_first=True,
        is_last=False,
    ):
        super().__init__()
        if planes != inplanes or stride != 1:
            self.skip = nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False)
            self.skipbn = nn.BatchNorm2d(planes)
        else:
            self.skip = None
        self.relu = nn.ReLU(inplace=True)
        rep = []
        filters = inplanes
        if grow_first:
            rep.append(self.relu)
            rep.append(SeparableConv2d_same(inplanes, planes, 3, stride=1, dilation=dilation))
            filters = planes
        for _ in range(reps - 1):
            rep.append(self.relu)
            rep.append(SeparableConv2d_same(filters, filters, 3, stride=1, dilation=dilation))
        if not grow_first:
            rep.append(self.relu)
            rep.append(SeparableConv2d_same(inplanes, planes, 3, stride=1, dilation=dilation))
        if not start_with_relu:
            rep = rep[1:]
        if stride != 1:
            self.block2_lastconv = nn.Sequential(
                self.relu, SeparableConv2d_same(planes, planes, 3, stride=2, dilation=dilation)
            )
        if is_last:
            rep.append(SeparableConv2d_same(planes, planes, 3, stride=1))
        self.rep = nn.Sequential(*rep)

    def forward(self, inp):
        x = self.rep(inp)
        low_middle = x.clone()
        x1 = self.block2_lastconv(x)
        if self.skip is not None:
            skip = self.skipbn(self.skip(inp))
        else:
            skip = inp
        x1 += skip
        return x1, low_middle


class Xception(nn.Module):
    def __init__(self, inplanes=3, os=16):
        super().__init__()
        entry_block3_stride, middle_block_rate, exit_block_rates = 2, 1, (1, 2)
        self.conv1 = nn.Conv2d(inplanes, 32, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(32, 64, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        self.block1 = Block(64, 128, reps=2, stride=2, start_with_relu=False)
        self.block2 = Block2(128, 256, reps=2, stride=2, start_with_relu=True, grow_first=True)
        self.block3 = Block(
            256, 728, reps=2, stride=entry_block3_stride, start_with_relu=True, grow_first=True
        )
        for i in range(4, 20):
            block = Block(
                728,
                728,
                reps=3,
                stride=1,
                dilation=middle_block_rate,
                start_with_relu=True,
                grow_first=True,
            )
            setattr(self, f"block{i}", block)
        self.block20 = Block(
            728,
            1024,
            reps=2,
            stride=1,
            dilation=exit_block_rates[0],
            start_with_relu=True,
            grow_first=False,
            is_last=True,
        )
        r = exit_block_rates[1]
        self.conv3 = SeparableConv2d_aspp(1024, 1536, 3, stride=1, dilation=r, padding=r)
        self.conv4 = SeparableConv2d_aspp(1536, 1536, 3, stride=1, dilation=r, padding=r)
        self.conv5 = SeparableConv2d_aspp(1536, 2048, 3, stride=1, dilation=r, padding=r)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.relu(self.bn2(self.conv2(x)))
        x = self.block1(x)
        x, low_level_feat = self.block2(x)
        for i in range(3, 21):
            x = getattr(self, f"block{i}")(x)
        x = self.relu(self.conv3(x))
        x = self.relu(self.conv4(x))
        x = self.relu(self.conv5(x))
        return x, low_level_feat


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=False):
        super().__init__()
        self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
        self.register_parameter("bias", None)

    def forward(self, input, adj=None, relu=False):
        support = torch.matmul(input, self.weight)
        output = torch.matmul(adj, support) if adj is not None else support
        return F.relu(output) if relu else output


class Featuremaps_to_Graph(nn.Module):
    def __init__(self, input_channels, hidden_layers, nodes=7):
        super().__init__()
        self.pre_fea = nn.Parameter(torch.FloatTensor(input_channels, nodes))
        self.weight = nn.Parameter(torch.FloatTensor(input_channels, hidden_layers))

    def forward(self, input):
        n, c, h, w = input.size()
        input1 = input.view(n, c, h * w).transpose(1, 2)
        fea_node = F.softmax(torch.matmul(input1, self.pre_fea), dim=-1)
        weight_node = torch.matmul(input1, self.weight)
        return F.relu(torch.matmul(fea_node.transpose(1, 2), weight_node))


class Graph_to_Featuremaps_savemem(nn.Module):
    def __init__(self, input_channels, output_channels, hidden_layers, nodes=7):
        super().__init__()
        self.node_fea_for_res = nn.Parameter(torch.FloatTensor(input_channels, 1))
        self.node_fea_for_hidden = nn.Parameter(torch.FloatTensor(hidden_layers, 1))
        self.weight = nn.Parameter(torch.FloatTensor(hidden_layers, output_channels))

    def forward(self, input, res_feature):
        batchi, channeli, hi, wi = res_feature.size()
        try:
            _, batch, nodes, hidden = input.size()
        except ValueError:
            input = input.unsqueeze(0)
            _, batch, nodes, hidden = input.size()
        assert batch == batchi
        input1 = input.transpose(0, 1).expand(batch, hi * wi, nodes, hidden)
        res_feature_after_view = res_feature.view(batch, channeli, hi * wi).transpose(1, 2)
        res_feature_after_view1 = res_feature_after_view.unsqueeze(2).expand(
            batch, hi * wi, nodes, channeli
        )
        new_node1 = torch.matmul(res_feature_after_view1, self.node_fea_for_res)
        new_node2 = torch.matmul(input1, self.node_fea_for_hidden)
        new_node = new_node1 + new_node2
        new_weight = torch.matmul(input, self.weight)
        new_node = F.softmax(new_node.view(batch, hi * wi, nodes), dim=-1)
        feature_out = torch.matmul(new_node, new_weight)
        feature_out = feature_out.transpose(2, 3).contiguous().view(res_feature.size())
        return F.relu(feature_out)


class Graph_trans(nn.Module):
    def __init__(self, in_features, out_features, begin_nodes=7, end_nodes=2, bias=False, adj=None):
        super().__init__()
        self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
        self.adj = nn.Parameter(torch.FloatTensor(end_nodes, begin_nodes))
        self.register_parameter("bias", None)

    def forward(self, input, relu=False, adj_return=False, adj=None):
        support = torch.matmul(input, self.weight)
        if adj is None:
            adj = self.adj
        adj1 = F.softmax(F.relu(adj), dim=-1)  # norm_trans_adj
        output = torch.matmul(adj1, support)
        return F.relu(output) if relu else output


class deeplab_xception_transfer_projection_savemem(nn.Module):
    """DeepLabv3_plus + deeplab_xception_transfer_basemodel_savememory + the projection."""

    def __init__(
        self,
        nInputChannels=3,
        n_classes=7,
        os=16,
        input_channels=256,
        hidden_layers=128,
        out_channels=256,
        source_classes=20,
    ):
        super().__init__()
        self.xception_features = Xception(nInputChannels, os)
        self.aspp1 = ASPP_module_rate0(2048, 256, rate=1)
        self.aspp2 = ASPP_module(2048, 256, rate=6)
        self.aspp3 = ASPP_module(2048, 256, rate=12)
        self.aspp4 = ASPP_module(2048, 256, rate=18)
        self.relu = nn.ReLU()
        self.global_avg_pool = nn.Sequential(
            nn.AdaptiveAvgPool2d((1, 1)),
            nn.Conv2d(2048, 256, 1, stride=1, bias=False),
            nn.BatchNorm2d(256),
            nn.ReLU(),
        )
        self.concat_projection_conv1 = nn.Conv2d(1280, 256, 1, bias=False)
        self.concat_projection_bn1 = nn.BatchNorm2d(256)
        self.feature_projection_conv1 = nn.Conv2d(256, 48, 1, bias=False)
        self.feature_projection_bn1 = nn.BatchNorm2d(48)
        self.decoder = nn.Sequential(Decoder_module(304, 256), Decoder_module(256, 256))
        self.semantic = nn.Conv2d(256, n_classes, kernel_size=1, stride=1)
        self.target_featuremap_2_graph = Featuremaps_to_Graph(
            input_channels, hidden_layers, nodes=n_classes
        )
        self.target_graph_conv1 = GraphConvolution(hidden_layers, hidden_layers)
        self.target_graph_conv2 = GraphConvolution(hidden_layers, hidden_layers)
        self.target_graph_conv3 = GraphConvolution(hidden_layers, hidden_layers)
        self.target_graph_2_fea = Graph_to_Featuremaps_savemem(
            input_channels, out_channels, hidden_layers, nodes=n_classes
        )
        self.target_skip_conv = nn.Sequential(
            nn.Conv2d(input_channels, input_channels, kernel_size=1), nn.ReLU(True)
        )
        self.source_featuremap_2_graph = Featuremaps_to_Graph(
            input_channels, hidden_layers, nodes=source_classes
        )
        self.source_graph_conv1 = GraphConvolution(hidden_layers, hidden_layers)
        self.source_graph_conv2 = GraphConvolution(hidden_layers, hidden_layers)
        self.source_graph_conv3 = GraphConvolution(hidden_layers, hidden_layers)
        self.transpose_graph = Graph_trans(
            hidden_layers, hidden_layers, begin_nodes=source_classes, end_nodes=n_classes
        )
        self.fc_graph = GraphConvolution(hidden_layers * 3, hidden_layers)

    def forward(self, input, adj1_target=None, adj2_source=None, adj3_transfer=None):
        x, low_level_features = self.xception_features(input)
        x1, x2, x3, x4 = self.aspp1(x), self.aspp2(x), self.aspp3(x), self.aspp4(x)
        x5 = self.global_avg_pool(x)
        x5 = F.interpolate(x5, size=x4.size()[2:], mode="bilinear", align_corners=True)
        x = torch.cat((x1, x2, x3, x4, x5), dim=1)
        x = self.relu(self.concat_projection_bn1(self.concat_projection_conv1(x)))
        x = F.interpolate(
            x, size=low_level_features.size()[2:], mode="bilinear", align_corners=True
        )
        low_level_features = self.relu(
            self.feature_projection_bn1(self.feature_projection_conv1(low_level_features))
        )
        x = self.decoder(torch.cat((x, low_level_features), dim=1))
        source_graph = self.source_featuremap_2_graph(x)
        source_graph1 = self.source_graph_conv1.forward(source_graph, adj=adj2_source, relu=True)
        source_graph2 = self.source_graph_conv2.forward(source_graph1, adj=adj2_source, relu=True)
        source_graph3 = self.source_graph_conv2.forward(source_graph2, adj=adj2_source, relu=True)
        v5_1 = self.transpose_graph.forward(source_graph1, adj=adj3_transfer, relu=True)
        v5_2 = self.transpose_graph.forward(source_graph2, adj=adj3_transfer, relu=True)
        v5_3 = self.transpose_graph.forward(source_graph3, adj=adj3_transfer, relu=True)
        graph = self.target_featuremap_2_graph(x)
        s2t = self.similarity_trans(source_graph1, graph)
        graph = torch.cat((graph, s2t.squeeze(0), v5_1.squeeze(0)), dim=-1)
        graph = self.fc_graph.forward(graph, relu=True)
        graph = self.target_graph_conv1.forward(graph, adj=adj1_target, relu=True)
        s2t = self.similarity_trans(source_graph2, graph)
        graph = torch.cat((graph, s2t, v5_2), dim=-1)
        graph = self.fc_graph.forward(graph, relu=True)
        graph = self.target_graph_conv2.forward(graph, adj=adj1_target, relu=True)
        s2t = self.similarity_trans(source_graph3, graph)
        graph = torch.cat((graph, s2t, v5_3), dim=-1)
        graph = self.fc_graph.forward(graph, relu=True)
        graph = self.target_graph_conv3.forward(graph, adj=adj1_target, relu=True)
        graph = self.target_graph_2_fea.forward(graph, x)
        x = self.target_skip_conv(x)
        x = x + graph
        x = self.semantic(x)
        return F.interpolate(x, size=input.size()[2:], mode="bilinear", align_corners=True)

    def similarity_trans(self, source, target):
        sim = torch.matmul(
            F.normalize(target, p=2, dim=-1), F.normalize(source, p=2, dim=-1).transpose(-1, -2)
        )
        sim = F.softmax(sim, dim=-1)
        return torch.matmul(sim, source)

    def load_source_model(self, state_dict):
        own_state = self.state_dict()
        new_state_dict = {}
        for name, param in state_dict.items():
            name = name.replace("module.", "")
            if (
                "graph" in name
                and "source" not in name
                and "target" not in name
                and "fc_" not in name
                and "transpose_graph" not in name
            ):
                if "featuremap_2_graph" in name:
                    name = name.replace("featuremap_2_graph", "source_featuremap_2_graph")
                else:
                    name = name.replace("graph", "source_graph")
            new_state_dict[name] = 0
            if name not in own_state:
                continue
            own_state[name].copy_(param)
        missing = set(own_state.keys()) - set(new_state_dict.keys())
        assert not missing, missing  # the release only prints them


def normalize_adj(adj):
    adj = sp.coo_matrix(adj)
    rowsum = np.array(adj.sum(1))
    d_inv_sqrt = np.power(rowsum, -0.5).flatten()
    d_inv_sqrt[np.isinf(d_inv_sqrt)] = 0.0
    d_mat_inv_sqrt = sp.diags(d_inv_sqrt)
    return adj.dot(d_mat_inv_sqrt).transpose().dot(d_mat_inv_sqrt).tocoo()


def preprocess_adj(adj):
    adj = nx.adjacency_matrix(nx.from_dict_of_lists(adj))
    return normalize_adj(adj + sp.eye(adj.shape[0])).todense()


class SegmentationWrapper(nn.Module):
    def __init__(self, state_dict):
        super().__init__()
        with torch.device("meta"):
            net = deeplab_xception_transfer_projection_savemem(
                n_classes=20, hidden_layers=128, source_classes=7
            )
        self.net = net.to_empty(device="cpu")
        self.net.load_source_model(state_dict)
        self.net.eval()
        self.rgb2bgr = transforms.Lambda(lambda x: x[:, [2, 1, 0], ...])
        adj2_ = torch.from_numpy(np.asarray(CIHP2PASCAL_NLP)).float()
        self.adj2_test = adj2_.unsqueeze(0).unsqueeze(0).expand(1, 1, 7, 20).transpose(2, 3)
        adj1_ = torch.from_numpy(np.asarray(preprocess_adj(PASCAL_GRAPH))).float()
        self.adj3_test = adj1_.unsqueeze(0).unsqueeze(0).expand(1, 1, 7, 7)
        adj3_ = torch.from_numpy(np.asarray(preprocess_adj(CIHP_GRAPH))).float()
        self.adj1_test = adj3_.unsqueeze(0).unsqueeze(0).expand(1, 1, 20, 20)
        SIZE = 5
        grid = np.meshgrid(
            np.arange(-SIZE // 2 + 1, SIZE // 2 + 1), np.arange(-SIZE // 2 + 1, SIZE // 2 + 1)
        )[:2]
        self.kernel = (grid[0] ** 2 + grid[1] ** 2 < (SIZE / 2.0) ** 2).astype("uint8")

    def forward(self, imgs):
        b, t = imgs.shape[:2]
        imgs = imgs.view(b * t, *imgs.shape[2:])
        inputs = self.rgb2bgr(imgs)
        outputs = []
        with torch.no_grad():
            for input in inputs.split(1, 0):
                outputs.append(
                    self.net.forward(input, self.adj1_test, self.adj3_test, self.adj2_test)
                )
        outputs = F.softmax(torch.cat(outputs, 0), 1)
        segs = 1 - outputs[:, [0]]
        eroded = [
            torch.from_numpy(cv2.erode(s[0, 0].cpu().numpy(), self.kernel, iterations=1))
            for s in segs.split(1, 0)
        ]
        return torch.stack(eroded)[:, None].to(imgs.device)


# --- infer.py ------------------------------------------------------------------------------

RELEASED_ARGS = {
    "image_size": 256,
    "eps": 1e-07,
    "num_source_frames": 1,
    "folder_postfix": "2d",
    "stickmen_thickness": 2,
    "emb_num_channels": 64,
    "emb_max_channels": 512,
    "emb_output_tensor_size": 8,
    "emb_norm_layer_type": "none",
    "emb_activation_type": "leakyrelu",
    "emb_downsampling_type": "avgpool",
    "emb_apply_masks": True,
    "emb_no_stickman": False,
    "tex_num_channels": 64,
    "tex_max_channels": 512,
    "tex_norm_layer_type": "ada_spade_bn",
    "tex_input_tensor_size": 4,
    "tex_skip_layer_type": "ada_conv",
    "tex_upsampling_type": "nearest",
    "tex_activation_type": "leakyrelu",
    "inf_num_channels": 32,
    "inf_max_channels": 256,
    "inf_norm_layer_type": "ada_bn",
    "inf_input_tensor_size": 4,
    "inf_skip_layer_type": "ada_conv",
    "inf_upsampling_type": "nearest",
    "inf_activation_type": "leakyrelu",
    "inf_pred_segmentation": True,
    "inf_pred_source_data": True,
    "pse_num_channels": 256,
    "pse_num_blocks": 4,
    "pse_in_channels": 136,
    "pse_activation_type": "leakyrelu",
    "pse_emb_source_pose": True,
    "enh_num_channels": 64,
    "enh_max_channels": 128,
    "enh_bottleneck_tensor_size": 128,
    "enh_num_blocks": 8,
    "enh_unrolling_depth": 4,
    "enh_norm_layer_type": "none",
    "enh_activation_type": "leakyrelu",
    "enh_downsampling_type": "avgpool",
    "enh_upsampling_type": "nearest",
}
# smaller widths the authors' arguments allow, same blocks: for fast tests
SMALL_ARGS = {
    **RELEASED_ARGS,
    "emb_num_channels": 4,
    "emb_max_channels": 16,
    "tex_num_channels": 4,
    "tex_max_channels": 16,
    "inf_num_channels": 2,
    "inf_max_channels": 8,
    "pse_num_channels": 16,
    "enh_num_channels": 4,
    "enh_max_channels": 8,
}


def args_namespace(values: dict) -> SimpleNamespace:
    return SimpleNamespace(**values)


def preprocess_data(args, input_imgs, poses_68, crop_data=True):
    """``InferenceWrapper.preprocess_data`` without the detector: ``poses_68`` are the
    landmarks face-alignment would give; returns (poses, imgs, stickmen)."""
    to_tensor = transforms.ToTensor()
    if len(input_imgs.shape) == 3:
        input_imgs = input_imgs[None]
        poses_68 = [poses_68]
    imgs, poses = [], []
    for i in range(input_imgs.shape[0]):
        pose = np.array(poses_68[i], dtype=np.float32)
        center = ((pose.min(0) + pose.max(0)) / 2).round().astype(int)
        size = int(max(pose[:, 0].max() - pose[:, 0].min(), pose[:, 1].max() - pose[:, 1].min()))
        center[1] -= size // 6
        img = Image.fromarray(input_imgs[i])
        if crop_data:
            img = img.crop((center[0] - size, center[1] - size, center[0] + size, center[1] + size))
            s = img.size[0]
            pose -= center - size
        img = img.resize((args.image_size, args.image_size), Image.BICUBIC)
        imgs.append((to_tensor(img) - 0.5) * 2)
        if crop_data:
            pose = pose / float(s)
        poses.append(torch.from_numpy((pose - 0.5) * 2).view(-1))
    poses = torch.stack(poses, 0)[None]
    stickmen = draw_stickmen(args, poses[0])[None]
    imgs = torch.stack(imgs, 0)[None]
    return poses, imgs, stickmen


def infer(args, nets, segmentation, source_img, source_lm, target_img, target_lm):
    """``InferenceWrapper.forward`` for one source and one target frame (RGB uint8)."""
    source_poses, source_imgs, source_stickmen = preprocess_data(args, source_img, source_lm)
    target_poses, target_imgs, target_stickmen = preprocess_data(
        args, target_img[None], [target_lm]
    )
    data_dict = {
        "source_imgs": source_imgs,
        "source_poses": source_poses,
        "target_poses": target_poses,
        "target_imgs": target_imgs,
        "source_segs": segmentation(source_imgs)[None],
        # the release also parses the target image; no network at inference reads it
        "source_stickmen": source_stickmen,
        "target_stickmen": target_stickmen,
    }
    with torch.no_grad():
        for name in NETWORKS_TEST:
            data_dict = nets[name](data_dict)
    return data_dict


# --- random weights in the released layout -------------------------------------------------

MAIN = "runs/vc2-hq_adrianb_paper_main"
ENHANCER = "runs/vc2-hq_adrianb_paper_enhancer"
FILES = {
    "identity_embedder": f"{MAIN}/checkpoints/2225_identity_embedder.pth",
    "texture_generator": f"{MAIN}/checkpoints/2225_texture_generator.pth",
    "keypoints_embedder": f"{MAIN}/checkpoints/2225_keypoints_embedder.pth",
    "inference_generator": f"{MAIN}/checkpoints/2225_inference_generator.pth",
    "texture_enhancer": f"{ENHANCER}/checkpoints/1225_texture_enhancer.pth",
}
ARGS_FILE = f"{ENHANCER}/args.txt"
GRAPHONOMY_FILE = "pretrained_weights/graphonomy/pretrained_model.pth"


def _with_spectral_norm(module, eps):
    module.apply(lambda m: spectral_norm(m, eps=eps))
    return module


def _spectral_state(module, seed):
    """Random values for a module under spectral normalisation: ``weight_orig`` random,
    ``weight_u``/``weight_v`` from three power iterations on it (so sigma is its largest
    singular value, as training leaves them); the inference generator's UV grid as built."""
    g = torch.Generator().manual_seed(seed + 1000)
    state = random_state(module, seed)
    if "identity_grid" in state:
        size = state["identity_grid"].shape[1]
        grid = torch.linspace(-1, 1, size + 1)
        grid = (grid[1:] + grid[:-1]) / 2
        v, u = torch.meshgrid(grid, grid, indexing="ij")
        state["identity_grid"] = torch.stack([u, v], 2)[None]
    for key in [k for k in state if k.endswith("weight_orig")]:
        stem = key[: -len("weight_orig")]
        w = state[key].reshape(state[key].shape[0], -1)
        u = F.normalize(torch.randn(w.shape[0], generator=g), dim=0)
        for _ in range(3):
            v = F.normalize(torch.mv(w.t(), u), dim=0)
            u = F.normalize(torch.mv(w, v), dim=0)
        state[stem + "weight_u"], state[stem + "weight_v"] = u, v
    return state


def build_network(args, name):
    """The release's network ``name`` under spectral normalisation, uninitialised."""
    with torch.device("meta"):
        net = _with_spectral_norm(NETWORKS[name](args), args.eps)
    return net.to_empty(device="cpu")


@functools.lru_cache(maxsize=16)
def random_network_state(name: str, small: bool = True, seed: int = 0) -> dict:
    """Random weights of one network of the release, its state dict as the file holds it
    (spectral-norm keys)."""
    args = args_namespace(SMALL_ARGS if small else RELEASED_ARGS)
    net = build_network(args, name)
    net.load_state_dict(_spectral_state(net, seed + list(NETWORKS).index(name)))
    return net.state_dict()


@functools.lru_cache(maxsize=2)
def random_graphonomy_state(seed: int = 0) -> dict:
    """Random weights of Graphonomy keyed as a file may hold them: with the ``module.``
    prefix of a DataParallel save and the source graph layers under the names
    ``load_source_model`` renames."""
    graph = random_state(
        empty(lambda: deeplab_xception_transfer_projection_savemem(n_classes=20, source_classes=7)),
        seed + 10,
        gain=0.5,
    )
    renamed = {}
    for key, value in graph.items():
        if key.startswith("source_graph_conv"):
            key = key.replace("source_graph_conv", "graph_conv")
        renamed["module." + key] = value
    return renamed


def random_states(small: bool = True, seed: int = 0) -> dict:
    """What ``torch.load`` gives of the released files with random weights: the five
    networks' state dicts and Graphonomy's."""
    states = {name: random_network_state(name, small, seed) for name in NETWORKS}
    states["graphonomy"] = random_graphonomy_state(seed)
    return states


def write_args(path: Path, values: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{k}: {v}\n" for k, v in sorted(values.items())]  # train.py's format
    path.write_text("".join(lines))


def random_release(tmp_path, small: bool = True, seed: int = 0) -> dict:
    """The released files with random weights under ``tmp_path`` (the release's folders);
    ``small``: the test widths of :data:`SMALL_ARGS` in ``args.txt``. Returns the
    ``fastreen`` official options."""
    root = Path(tmp_path) / "bilayer-model"
    states = random_states(small, seed)
    options = {}
    for name, rel in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        torch.save(states[name], root / rel)
        options[f"{name}_path"] = str(root / rel)
    (root / GRAPHONOMY_FILE).parent.mkdir(parents=True, exist_ok=True)
    torch.save(states["graphonomy"], root / GRAPHONOMY_FILE)
    write_args(root / ARGS_FILE, SMALL_ARGS if small else RELEASED_ARGS)
    options["graphonomy_path"] = str(root / GRAPHONOMY_FILE)
    options["args_path"] = str(root / ARGS_FILE)
    return options


def load_release(small: bool = True, seed: int = 0):
    """The release's own loading of the files' contents: every network built under spectral
    normalisation, its state dict loaded, the normalisation removed (``InferenceWrapper``),
    eval mode; and the ``SegmentationWrapper``. Returns (args, nets, segmentation)."""
    args = args_namespace(SMALL_ARGS if small else RELEASED_ARGS)
    states = random_states(small, seed)
    nets = {}
    for name in NETWORKS:
        net = build_network(args, name)
        net.load_state_dict(states[name])
        nets[name] = net.apply(remove_spectral_norm).eval()
    return args, nets, SegmentationWrapper(states["graphonomy"])
