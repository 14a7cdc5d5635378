"""A test-side restatement of MaskGAN's demo generator and of the demo's ``edit`` step
(switchablenorms/CelebAMask-HQ, ``MaskGAN_demo/models/networks.py``, ``models/pix2pixHD_model.py``,
``data/base_dataset.py``, ``demo.py``), written from reading them.

It exists to produce what fairforge's ``official`` maskgan backend must reproduce: the
release's state-dict keys and shapes (``latest_net_G.pth``: the generator's ``state_dict()``,
saved by ``BaseModel.save_network``) and the generator's outputs on the demo's inputs. The
modules keep the authors' attribute names, layer order and quirks: the AdaIN parameters are
assigned to the modules before each call and applied by ``F.batch_norm`` in training mode on
the batch folded into channels; activations are modules (in place); the label encoder's
``model_last`` starts with a ReLU; the demo turns its label maps into one-hot tensors with
``scatter_`` over a three-channel map read by OpenCV, and its output into uint8 by
truncation. What is left out: the discriminators, the blend network, the losses and the CUDA
placement (the demo creates its one-hot tensors on the GPU).

``random_release(folder)`` writes random-weight release files of the official backend
(a small generator and the full BiSeNet parser, in the releases' layouts) and returns the
method options that load them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import torchvision.transforms as transforms
from PIL import Image
from torch import nn

# face_parsing/Data_preprocessing/g_mask.py ("list2"): label k + 1 is label_list[k]; the
# demo's drawing modes (bg_mode ... cloth_mode) take the same numbers, 0 the background.
LABEL_LIST = ["skin", "nose", "eye_g", "l_eye", "r_eye", "l_brow", "r_brow", "l_ear", "r_ear",
              "mouth", "u_lip", "l_lip", "hair", "hat", "ear_r", "neck_l", "neck", "cloth"]  # fmt: skip
DEMO_MODES = ["bg", "skin", "nose", "eye_g", "l_eye", "r_eye", "l_brow", "r_brow", "l_ear", "r_ear",
              "mouth", "u_lip", "l_lip", "hair", "hat", "ear_r", "neck_l", "neck", "cloth"]  # fmt: skip

# --- networks.py ------------------------------------------------------------------------------


class AdaptiveInstanceNorm2d(nn.Module):
    def __init__(self, num_features, eps=1e-5, momentum=0.1):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.weight = None  # assigned by GlobalGenerator.assign_adain_params
        self.bias = None
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x):
        b, c = x.size(0), x.size(1)
        running_mean = self.running_mean.repeat(b)
        running_var = self.running_var.repeat(b)
        folded = x.contiguous().view(1, b * c, *x.size()[2:])
        out = F.batch_norm(
            folded, running_mean, running_var, self.weight, self.bias, True, self.momentum, self.eps
        )
        return out.view(b, c, *x.size()[2:])


class ConvBlock(nn.Module):
    """The authors' block for the options the generator uses: reflect padding, norm 'none'
    or 'adain', activation 'relu' or 'none'."""

    def __init__(self, input_dim, output_dim, kernel_size, stride, padding=0, norm="none",
                 activation="relu", pad_type="reflect"):  # fmt: skip
        super().__init__()
        assert pad_type == "reflect"
        self.pad = nn.ReflectionPad2d(padding)
        self.norm = AdaptiveInstanceNorm2d(output_dim) if norm == "adain" else None
        self.activation = nn.ReLU(inplace=True) if activation == "relu" else None
        self.conv = nn.Conv2d(input_dim, output_dim, kernel_size, stride, bias=True)

    def forward(self, x):
        x = self.conv(self.pad(x))
        if self.norm:
            x = self.norm(x)
        if self.activation:
            x = self.activation(x)
        return x


class ResnetBlock(nn.Module):
    def __init__(self, dim, norm_type, padding_type):
        super().__init__()
        self.conv_block = nn.Sequential(
            ConvBlock(dim, dim, 3, 1, 1, norm=norm_type, activation="relu", pad_type=padding_type),
            ConvBlock(dim, dim, 3, 1, 1, norm=norm_type, activation="none", pad_type=padding_type),
        )

    def forward(self, x):
        return x + self.conv_block(x)


class SFTLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.SFT_scale_conv1 = nn.Conv2d(64, 64, 1)
        self.SFT_scale_conv2 = nn.Conv2d(64, 64, 1)
        self.SFT_shift_conv1 = nn.Conv2d(64, 64, 1)
        self.SFT_shift_conv2 = nn.Conv2d(64, 64, 1)

    def forward(self, x):
        scale = self.SFT_scale_conv2(F.leaky_relu(self.SFT_scale_conv1(x[1]), 0.1, inplace=True))
        shift = self.SFT_shift_conv2(F.leaky_relu(self.SFT_shift_conv1(x[1]), 0.1, inplace=True))
        return x[0] * scale + shift


class StyleEncoder(nn.Module):
    def __init__(self, n_downsample, input_dim, dim, style_dim, norm, activ, pad_type):
        super().__init__()
        model = [ConvBlock(input_dim, dim, 7, 1, 3, norm=norm, activation=activ, pad_type=pad_type)]
        for _ in range(2):
            model += [
                ConvBlock(dim, 2 * dim, 4, 2, 1, norm=norm, activation=activ, pad_type=pad_type)
            ]
            dim *= 2
        middle = [
            ConvBlock(dim, dim, 4, 2, 1, norm=norm, activation=activ, pad_type=pad_type)
            for _ in range(n_downsample - 2)
        ]
        self.model = nn.Sequential(*model)
        self.model_middle = nn.Sequential(*middle)
        self.model_last = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(dim, style_dim, 1, 1, 0))
        self.output_dim = dim
        self.sft1 = SFTLayer()
        self.sft2 = SFTLayer()

    def forward(self, x):
        fea = self.model(x[0])
        fea = self.sft1((fea, x[1]))
        fea = self.model_middle(fea)
        fea = self.sft2((fea, x[2]))
        return self.model_last(fea)


class LabelEncoder(nn.Module):
    def __init__(self, n_downsample, input_dim, dim, style_dim, norm, activ, pad_type):
        super().__init__()
        model = [ConvBlock(input_dim, dim, 7, 1, 3, norm=norm, activation=activ, pad_type=pad_type)]
        model += [ConvBlock(dim, 2 * dim, 4, 2, 1, norm=norm, activation=activ, pad_type=pad_type)]
        dim *= 2
        model += [ConvBlock(dim, 2 * dim, 4, 2, 1, norm=norm, activation="none", pad_type=pad_type)]
        dim *= 2
        last = [nn.ReLU()]
        for _ in range(n_downsample - 3):
            last += [ConvBlock(dim, dim, 4, 2, 1, norm=norm, activation=activ, pad_type=pad_type)]
        last += [ConvBlock(dim, dim, 4, 2, 1, norm=norm, activation="none", pad_type=pad_type)]
        self.model = nn.Sequential(*model)
        self.model_last = nn.Sequential(*last)
        self.output_dim = dim

    def forward(self, x):
        fea = self.model(x)
        return fea, self.model_last(fea)


class GlobalGenerator(nn.Module):
    def __init__(self, input_nc, output_nc, ngf=64, n_downsampling=3, n_blocks=9,
                 norm_layer=nn.BatchNorm2d, padding_type="reflect"):  # fmt: skip
        super().__init__()
        activation = nn.ReLU(True)
        model = [nn.ReflectionPad2d(3), nn.Conv2d(input_nc, ngf, kernel_size=7, padding=0),
                 norm_layer(ngf), activation]  # fmt: skip
        for i in range(n_downsampling):
            mult = 2**i
            model += [nn.Conv2d(ngf * mult, ngf * mult * 2, kernel_size=3, stride=2, padding=1),
                      norm_layer(ngf * mult * 2), activation]  # fmt: skip
        mult = 2**n_downsampling
        for _ in range(n_blocks):
            model += [ResnetBlock(ngf * mult, norm_type="adain", padding_type=padding_type)]
        for i in range(n_downsampling):
            mult = 2 ** (n_downsampling - i)
            model += [nn.ConvTranspose2d(ngf * mult, int(ngf * mult / 2), kernel_size=3, stride=2,
                                         padding=1, output_padding=1),
                      norm_layer(int(ngf * mult / 2)), activation]  # fmt: skip
        model += [
            nn.ReflectionPad2d(3),
            nn.Conv2d(ngf, output_nc, kernel_size=7, padding=0),
            nn.Tanh(),
        ]
        self.model = nn.Sequential(*model)
        self.enc_style = StyleEncoder(5, 3, 16, self.get_num_adain_params(self.model), norm="none",
                                      activ="relu", pad_type="reflect")  # fmt: skip
        self.enc_label = LabelEncoder(5, 19, 16, 64, norm="none", activ="relu", pad_type="reflect")

    def assign_adain_params(self, adain_params, model):
        for m in model.modules():
            if m.__class__.__name__ == "AdaptiveInstanceNorm2d":
                mean = adain_params[:, : m.num_features]
                std = adain_params[:, m.num_features : 2 * m.num_features]
                m.bias = mean.contiguous().view(-1)
                m.weight = std.contiguous().view(-1)
                if adain_params.size(1) > 2 * m.num_features:
                    adain_params = adain_params[:, 2 * m.num_features :]

    def get_num_adain_params(self, model):
        return sum(
            2 * m.num_features
            for m in model.modules()
            if m.__class__.__name__ == "AdaptiveInstanceNorm2d"
        )

    def forward(self, input, input_ref, image_ref):
        fea1, fea2 = self.enc_label(input_ref)
        adain_params = self.enc_style((image_ref, fea1, fea2))
        self.assign_adain_params(adain_params, self.model)
        return self.model(input)


def define_G(ngf=64, n_downsample_global=4, n_blocks_global=4, input_nc=19, output_nc=3):
    """``networks.define_G(..., netG='global', norm='instance')`` with the demo's options,
    without the CUDA placement and the random init (the test assigns its own weights)."""
    norm_layer = lambda c: nn.InstanceNorm2d(c, affine=False)  # noqa: E731
    return GlobalGenerator(
        input_nc, output_nc, ngf, n_downsample_global, n_blocks_global, norm_layer
    )


# --- demo.py, base_dataset.py, pix2pixHD_model.py: the edit step -------------------------------


def _scale_width(img, target_width, method):
    ow, oh = img.size
    if ow == target_width:
        return img
    return img.resize((target_width, int(target_width * oh / ow)), method)


def get_transform(load_size, method=Image.BICUBIC, normalize=True, normalize_mask=False):
    """``get_transform`` for the demo's options (``resize_or_crop='scale_width'``, testing)."""
    steps = [
        transforms.Lambda(lambda img: _scale_width(img, load_size, method)),
        transforms.ToTensor(),
    ]
    if normalize:
        steps += [transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))]
    if normalize_mask:
        steps += [transforms.Normalize((0, 0, 0), (1 / 255.0, 1 / 255.0, 1 / 255.0))]
    return transforms.Compose(steps)


def encode_input_test(label_map, label_map_ref, label_nc=19):
    size = label_map.size()
    onehot = (size[0], label_nc, size[2], size[3])
    input_label = torch.FloatTensor(torch.Size(onehot)).zero_()
    input_label = input_label.scatter_(1, label_map.data.long(), 1.0)
    input_label_ref = torch.FloatTensor(torch.Size(onehot)).zero_()
    input_label_ref = input_label_ref.scatter_(1, label_map_ref.data.long(), 1.0)
    return input_label, input_label_ref


def demo_edit(netG, mask, mask_m, img, load_size=512, label_scaling="demo"):
    """``Ex.edit``: ``mask`` the original label map and ``mask_m`` the edited one, each as
    the demo holds them (``cv2.imread`` of a label PNG: HxWx3 uint8, the label in every
    channel), ``img`` the PIL image; returns the uint8 RGB result.

    ``label_scaling="demo"`` scales the maps back to labels as the demo does
    (``Normalize((0, 0, 0), (1/255, 1/255, 1/255))`` after ``ToTensor``), which in float32
    gives 6.9999995 for 7, 12.999999 for 13, 13.999999 for 14 and 14.999999 for 15, so that
    ``scatter_``'s ``long()`` moves r_brow to l_brow, hair to l_lip, hat to hair and
    earrings to hat; ``"train"`` scales them as the training data loader does
    (``aligned_dataset.py``: ``transform_A(A) * 255.0``, exact), the encoding the generator
    learned."""
    if label_scaling == "demo":
        transform_mask = get_transform(
            load_size, method=Image.NEAREST, normalize=False, normalize_mask=True
        )
    else:
        to_labels = get_transform(load_size, method=Image.NEAREST, normalize=False)
        transform_mask = lambda m: to_labels(m) * 255.0  # noqa: E731
    transform_image = get_transform(load_size)
    mask = transform_mask(Image.fromarray(np.uint8(mask)))
    mask_m = transform_mask(Image.fromarray(np.uint8(mask_m)))
    img = transform_image(img)
    label, label_ref = encode_input_test(
        torch.FloatTensor(np.array([mask_m.numpy()])), torch.FloatTensor(np.array([mask.numpy()]))
    )
    with torch.no_grad():
        generated = netG.forward(label, label_ref, torch.FloatTensor(np.array([img.numpy()])))
    result = generated.permute(0, 2, 3, 1).cpu().numpy()
    result = (result + 1) * 127.5
    return np.asarray(result[0, :, :, :], dtype=np.uint8)


# --- random releases -----------------------------------------------------------------------------

SMALL = {"ngf": 4, "n_downsample_global": 2, "n_blocks_global": 1}


def save_release(state: dict, path) -> None:
    """A state dict as the 2019 releases were written (PyTorch's legacy, non-zip format)."""
    torch.save(state, path, _use_new_zipfile_serialization=False)


# official_support.random_state's weights at this gain keep random activations of order one
# through both releases' depths
GAIN = 0.7


def random_generator(seed: int = 0, sizes: dict = SMALL) -> nn.Module:
    """A random generator of ``sizes`` (the demo's options; ``{}``: the release's)."""
    from official_support import empty, loaded, random_state

    return loaded(
        lambda: define_G(**sizes), random_state(empty(lambda: define_G(**sizes)), seed, GAIN)
    )


def random_release(folder, seed: int = 0, full: bool = False) -> dict:
    """Random-weight release files of ``maskgan`` ``backend: official`` in ``folder`` (made if
    missing): ``latest_net_G.pth`` (a small generator, :data:`SMALL`, at a 64-pixel ``load_size``; with
    ``full`` the release's sizes at 512, 360 MB) and ``79999_iter.pth`` (the full BiSeNet,
    its class scores tilted towards the face's classes so that the parsing of a crop holds
    skin and parts to edit); returns the method's options."""
    import bisenet_reference

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    generator = folder / "latest_net_G.pth"
    parser = folder / "79999_iter.pth"
    sizes = {} if full else SMALL
    save_release(random_generator(seed, sizes).state_dict(), generator)
    save_release(bisenet_reference.random_face_parser(seed).state_dict(), parser)
    options = {"generator_path": str(generator), "parser_path": str(parser), **sizes}
    return options if full else {**options, "load_size": 64}
