"""A test-side re-statement of SimSwap's inference code (neuralchen/SimSwap), written from
reading it, to check fairforge's ``simswap`` official backend against.

It keeps the authors' module and attribute names, their order of operations and their
quirks: ``Generator_Adain_Upsample`` of ``models/fs_networks.py`` (224) and
``models/fs_networks_512.py`` (512) with the padding-type switch of ``ResnetBlock_Adain``;
the ArcFace ``ResNet``/``IRBlock``/``SEBlock`` of ``models/arcface_models.py`` (whose
``conv3x3``, missing from that file, is foamliu/InsightFace-v2's: padding 1, no bias);
``estimate_norm`` of ``insightface_func/utils/face_align_ffhqandnewarc.py`` with scikit-image's
``SimilarityTransform``; ``Face_detect_crop.get``'s warp; the whole-image inference of
``test_wholeimage_swapsingle.py`` (torchvision's ``ToTensor`` and ``Normalize`` for the
identity, ``F.interpolate`` to 112, ``F.normalize``) and ``reverse2wholeimage`` of
``util/reverse2original.py`` without the parsing mask or the watermark, in BGR as the
authors run it.

It also writes random weights in the release's layouts: the generator's state dict as
``save_network`` writes it, and ArcFace as a whole pickled model whose classes are
``models.arcface_models.*``, as ``arcface_checkpoint.tar`` is.
"""

from __future__ import annotations

import contextlib
import sys
import types
import warnings
from pathlib import Path

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from skimage import transform as trans
from torch import nn
from torchvision import transforms

# --- models/fs_networks.py, models/fs_networks_512.py ---------------------------------------


class InstanceNorm(nn.Module):
    def __init__(self, epsilon=1e-8):
        super().__init__()
        self.epsilon = epsilon

    def forward(self, x):
        x = x - torch.mean(x, (2, 3), True)
        tmp = torch.mul(x, x)
        tmp = torch.rsqrt(torch.mean(tmp, (2, 3), True) + self.epsilon)
        return x * tmp


class ApplyStyle(nn.Module):
    def __init__(self, latent_size, channels):
        super().__init__()
        self.linear = nn.Linear(latent_size, channels * 2)

    def forward(self, x, latent):
        style = self.linear(latent)
        style = style.view([-1, 2, x.size(1), 1, 1])
        return x * (style[:, 0] * 1 + 1.0) + style[:, 1] * 1


def _pad_conv(dim, padding_type):
    layers, p = [], 0
    if padding_type == "reflect":
        layers.append(nn.ReflectionPad2d(1))
    elif padding_type == "replicate":
        layers.append(nn.ReplicationPad2d(1))
    elif padding_type == "zero":
        p = 1
    else:
        raise NotImplementedError(padding_type)
    return nn.Sequential(*layers, nn.Conv2d(dim, dim, kernel_size=3, padding=p), InstanceNorm())


class ResnetBlock_Adain(nn.Module):
    def __init__(self, dim, latent_size, padding_type, activation=None):
        super().__init__()
        self.conv1 = _pad_conv(dim, padding_type)
        self.style1 = ApplyStyle(latent_size, dim)
        self.act1 = activation if activation is not None else nn.ReLU(True)
        self.conv2 = _pad_conv(dim, padding_type)
        self.style2 = ApplyStyle(latent_size, dim)

    def forward(self, x, dlatents_in_slice):
        y = self.conv1(x)
        y = self.style1(y, dlatents_in_slice)
        y = self.act1(y)
        y = self.conv2(y)
        y = self.style2(y, dlatents_in_slice)
        return x + y


def _stride2(cin, cout, norm_layer, activation):
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel_size=3, stride=2, padding=1), norm_layer(cout), activation
    )


def _upsample(cin, cout, activation):
    return nn.Sequential(
        nn.Upsample(scale_factor=2, mode="bilinear"),
        nn.Conv2d(cin, cout, kernel_size=3, stride=1, padding=1),
        nn.BatchNorm2d(cout),
        activation,
    )


class Generator_Adain_Upsample(nn.Module):
    """fs_networks.py (224); ``fs_networks_512`` below adds ``down0``/``up0`` and 32 channels."""

    fs_networks_512 = False

    def __init__(
        self,
        input_nc,
        output_nc,
        latent_size,
        n_blocks=6,
        deep=False,
        norm_layer=nn.BatchNorm2d,
        padding_type="reflect",
    ):
        assert n_blocks >= 0
        super().__init__()
        activation = nn.ReLU(True)
        self.deep = deep
        top = 32 if self.fs_networks_512 else 64
        self.first_layer = nn.Sequential(
            nn.ReflectionPad2d(3),
            nn.Conv2d(input_nc, top, kernel_size=7, padding=0),
            norm_layer(top),
            activation,
        )
        if self.fs_networks_512:
            self.down0 = _stride2(32, 64, norm_layer, activation)
        self.down1 = _stride2(64, 128, norm_layer, activation)
        self.down2 = _stride2(128, 256, norm_layer, activation)
        self.down3 = _stride2(256, 512, norm_layer, activation)
        if self.deep:
            self.down4 = _stride2(512, 512, norm_layer, activation)
        self.BottleNeck = nn.Sequential(
            *[
                ResnetBlock_Adain(512, latent_size, padding_type, activation)
                for _ in range(n_blocks)
            ]
        )
        if self.deep:
            self.up4 = _upsample(512, 512, activation)
        self.up3 = _upsample(512, 256, activation)
        self.up2 = _upsample(256, 128, activation)
        self.up1 = _upsample(128, 64, activation)
        if self.fs_networks_512:
            self.up0 = _upsample(64, 32, activation)
        self.last_layer = nn.Sequential(
            nn.ReflectionPad2d(3), nn.Conv2d(top, output_nc, kernel_size=7, padding=0), nn.Tanh()
        )

    def forward(self, input, dlatents):
        x = input
        skip1 = self.first_layer(x)
        if self.fs_networks_512:
            skip1 = self.down0(skip1)
        skip2 = self.down1(skip1)
        skip3 = self.down2(skip2)
        if self.deep:
            skip4 = self.down3(skip3)
            x = self.down4(skip4)
        else:
            x = self.down3(skip3)
        for i in range(len(self.BottleNeck)):
            x = self.BottleNeck[i](x, dlatents)
        if self.deep:
            x = self.up4(x)
        x = self.up3(x)
        x = self.up2(x)
        x = self.up1(x)
        if self.fs_networks_512:
            x = self.up0(x)
        x = self.last_layer(x)
        return (x + 1) / 2


class Generator_Adain_Upsample_512(Generator_Adain_Upsample):
    fs_networks_512 = True


def build_generator(crop_size: int, n_blocks: int = 9) -> nn.Module:
    """``fsModel.initialize``'s generator for ``crop_size`` (deep=False at inference)."""
    cls = Generator_Adain_Upsample_512 if crop_size == 512 else Generator_Adain_Upsample
    return cls(input_nc=3, output_nc=3, latent_size=512, n_blocks=n_blocks, deep=False)


# --- models/arcface_models.py (conv3x3: foamliu/InsightFace-v2) ------------------------------


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class SEBlock(nn.Module):
    def __init__(self, channel, reduction=16):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(
            nn.Linear(channel, channel // reduction),
            nn.PReLU(),
            nn.Linear(channel // reduction, channel),
            nn.Sigmoid(),
        )

    def forward(self, x):
        b, c, _, _ = x.size()
        y = self.avg_pool(x).view(b, c)
        y = self.fc(y).view(b, c, 1, 1)
        return x * y


class IRBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, use_se=True):
        super().__init__()
        self.bn0 = nn.BatchNorm2d(inplanes)
        self.conv1 = conv3x3(inplanes, inplanes)
        self.bn1 = nn.BatchNorm2d(inplanes)
        self.prelu = nn.PReLU()
        self.conv2 = conv3x3(inplanes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride
        self.use_se = use_se
        if self.use_se:
            self.se = SEBlock(planes)

    def forward(self, x):
        residual = x
        out = self.bn0(x)
        out = self.conv1(out)
        out = self.bn1(out)
        out = self.prelu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.use_se:
            out = self.se(out)
        if self.downsample is not None:
            residual = self.downsample(x)
        out += residual
        out = self.prelu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, block, layers, use_se=True):
        self.inplanes = 64
        self.use_se = use_se
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.prelu = nn.PReLU()
        self.maxpool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.bn2 = nn.BatchNorm2d(512)
        self.dropout = nn.Dropout()
        self.fc = nn.Linear(512 * 7 * 7, 512)
        self.bn3 = nn.BatchNorm1d(512)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(
                    self.inplanes,
                    planes * block.expansion,
                    kernel_size=1,
                    stride=stride,
                    bias=False,
                ),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample, use_se=self.use_se)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, use_se=self.use_se))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.prelu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.bn2(x)
        x = self.dropout(x)
        x = x.view(x.size(0), -1)
        x = self.fc(x)
        x = self.bn3(x)
        return x


# --- random weights in the release's layouts -------------------------------------------------


def randomize(module: nn.Module, seed: int) -> nn.Module:
    """Every parameter and BatchNorm statistic drawn from ``seed``, scaled per layer so that
    activations stay of order one; the module in eval mode."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in sorted(module.state_dict().items()):
            if name.endswith("num_batches_tracked"):
                continue
            leaf = name.rsplit(".", 1)[-1]
            if leaf == "running_var" or (leaf == "weight" and tensor.ndim == 1):
                values = 0.5 + torch.rand(tensor.shape, generator=gen)  # BN scale, var; PReLU
                if tensor.numel() == 1:
                    values = values * 0.3  # PReLU slope
            elif leaf in ("running_mean", "bias"):
                values = 0.1 * torch.randn(tensor.shape, generator=gen)
            else:
                fan_in = tensor[0].numel()
                values = torch.randn(tensor.shape, generator=gen) / fan_in**0.5
            tensor.copy_(values)
    return module.eval()


def random_generator(crop_size: int, seed: int, n_blocks: int = 9) -> nn.Module:
    return randomize(build_generator(crop_size, n_blocks), seed)


def random_arcface(seed: int, layers=(3, 4, 23, 3)) -> nn.Module:
    return randomize(ResNet(IRBlock, list(layers), use_se=True), seed)


def save_generator(net: nn.Module, path: Path) -> Path:
    """As ``BaseModel.save_network``: the state dict, nothing around it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(net.state_dict(), path)
    return path


@contextlib.contextmanager
def _authors_module_names():
    """The ArcFace classes under ``models.arcface_models``, the names the release pickles."""
    package, module = types.ModuleType("models"), types.ModuleType("models.arcface_models")
    package.arcface_models = module
    saved = {name: sys.modules.get(name) for name in ("models", "models.arcface_models")}
    originals = {}
    for cls in (ResNet, IRBlock, SEBlock):
        originals[cls] = cls.__module__
        cls.__module__ = "models.arcface_models"
        setattr(module, cls.__name__, cls)
    sys.modules.update({"models": package, "models.arcface_models": module})
    try:
        yield
    finally:
        for cls, name in originals.items():
            cls.__module__ = name
        for name, value in saved.items():
            if value is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = value


def save_arcface_release(net: nn.Module, path: Path) -> Path:
    """As ``arcface_checkpoint.tar``: the whole model pickled (``torch.save(model)``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _authors_module_names():
        torch.save(net, path)
    return path


SMALL_ARCFACE = (1, 1, 1, 1)  # one block per stage: the layout of the release, less deep


def write_random_release(folder: Path, crop_size: int, seed: int, n_blocks=9, layers=SMALL_ARCFACE):
    """Random SimSwap files in ``folder`` as released (the ArcFace one then converted by
    fairforge): ``(options of the official backend, reference generator, reference ArcFace)``."""
    from fairforge.forgery.nets.arcface import convert_release

    gen = random_generator(crop_size, seed, n_blocks)
    arc = random_arcface(seed + 1, layers)
    name = "people/latest_net_G.pth" if crop_size == 224 else "512/550000_net_G.pth"
    generator_path = save_generator(gen, folder / "checkpoints" / name)
    tar = save_arcface_release(arc, folder / "arcface_model" / "arcface_checkpoint.tar")
    convert_release(tar, folder / "arcface.pth")
    options = {
        "generator_path": str(generator_path),
        "arcface_path": str(folder / "arcface.pth"),
        "crop_size": crop_size,
    }
    return options, gen, arc


# --- insightface_func/utils/face_align_ffhqandnewarc.py ---------------------------------------

src1 = np.array(
    [[51.642, 50.115], [57.617, 49.990], [35.740, 69.007], [51.157, 89.050], [57.025, 89.702]],
    dtype=np.float32,
)
src2 = np.array(
    [[45.031, 50.118], [65.568, 50.872], [39.677, 68.111], [45.177, 86.190], [64.246, 86.758]],
    dtype=np.float32,
)
src3 = np.array(
    [[39.730, 51.138], [72.270, 51.138], [56.000, 68.493], [42.463, 87.010], [69.537, 87.010]],
    dtype=np.float32,
)
src4 = np.array(
    [[46.845, 50.872], [67.382, 50.118], [72.737, 68.111], [48.167, 86.758], [67.236, 86.190]],
    dtype=np.float32,
)
src5 = np.array(
    [[54.796, 49.990], [60.771, 50.115], [76.673, 69.007], [55.388, 89.702], [61.257, 89.050]],
    dtype=np.float32,
)
src_map = np.array([src1, src2, src3, src4, src5])
ffhq_src = np.expand_dims(
    np.array(
        [
            [192.98138, 239.94708],
            [318.90277, 240.1936],
            [256.63416, 314.01935],
            [201.26117, 371.41043],
            [313.08905, 371.15118],
        ]
    ),
    axis=0,
)


def estimate_norm(lmk, image_size=112, mode="ffhq"):
    assert lmk.shape == (5, 2)
    tform = trans.SimilarityTransform()
    lmk_tran = np.insert(lmk, 2, values=np.ones(5), axis=1)
    min_M, min_index, min_error = [], [], float("inf")
    src = ffhq_src * image_size / 512 if mode == "ffhq" else src_map * image_size / 112
    for i in np.arange(src.shape[0]):
        with warnings.catch_warnings():  # scikit-image 0.26 renames the authors' call
            warnings.simplefilter("ignore", FutureWarning)
            tform.estimate(lmk, src[i])
        M = tform.params[0:2, :]
        results = np.dot(M, lmk_tran.T).T
        error = np.sum(np.sqrt(np.sum((results - src[i]) ** 2, axis=1)))
        if error < min_error:
            min_error, min_M, min_index = error, M, i
    return min_M, min_index


def detect_crop(img_bgr, kps, crop_size):
    """``Face_detect_crop.get`` once SCRFD has given ``kps``: mode 'ffhq' at 512, else 'None'."""
    mode = "ffhq" if crop_size == 512 else "None"
    M, _ = estimate_norm(kps, crop_size, mode=mode)
    align_img = cv2.warpAffine(img_bgr, M, (crop_size, crop_size), borderValue=0.0)
    return [align_img], [M]


# --- test_wholeimage_swapsingle.py and util/reverse2original.py --------------------------------

transformer_Arcface = transforms.Compose(
    [transforms.ToTensor(), transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]
)


def _totensor(array):
    tensor = torch.from_numpy(array)
    img = tensor.transpose(0, 1).transpose(0, 2).contiguous()
    return img.float().div(255)


def reverse2wholeimage(b_align_crop_tenor_list, swaped_imgs, mats, crop_size, oriimg):
    """Without ``use_mask``, the watermark or the file: the blended BGR image."""
    target_image_list, img_mask_list = [], []
    for swaped_img, mat, _source in zip(swaped_imgs, mats, b_align_crop_tenor_list):
        swaped_img = swaped_img.cpu().detach().numpy().transpose((1, 2, 0))
        img_white = np.full((crop_size, crop_size), 255, dtype=float)
        mat_rev = np.zeros([2, 3])
        div1 = mat[0][0] * mat[1][1] - mat[0][1] * mat[1][0]
        mat_rev[0][0] = mat[1][1] / div1
        mat_rev[0][1] = -mat[0][1] / div1
        mat_rev[0][2] = -(mat[0][2] * mat[1][1] - mat[0][1] * mat[1][2]) / div1
        div2 = mat[0][1] * mat[1][0] - mat[0][0] * mat[1][1]
        mat_rev[1][0] = mat[1][0] / div2
        mat_rev[1][1] = -mat[0][0] / div2
        mat_rev[1][2] = -(mat[0][2] * mat[1][0] - mat[0][0] * mat[1][2]) / div2
        orisize = (oriimg.shape[1], oriimg.shape[0])
        target_image = cv2.warpAffine(swaped_img, mat_rev, orisize)
        img_white = cv2.warpAffine(img_white, mat_rev, orisize)
        img_white[img_white > 20] = 255
        img_mask = cv2.erode(img_white, np.ones((40, 40), np.uint8), iterations=1)
        img_mask = cv2.GaussianBlur(img_mask, (41, 41), 0)
        img_mask /= 255
        img_mask = np.reshape(img_mask, [img_mask.shape[0], img_mask.shape[1], 1])
        target_image = np.array(target_image, dtype=np.float64)[..., ::-1] * 255
        img_mask_list.append(img_mask)
        target_image_list.append(target_image)
    img = np.array(oriimg, dtype=np.float64)
    for img_mask, target_image in zip(img_mask_list, target_image_list):
        img = img_mask * target_image + (1 - img_mask) * img
    return img.astype(np.uint8)


def whole_image_swap(net_arc, net_g, img_a_whole, kps_a, img_b_whole, kps_b, crop_size):
    """``test_wholeimage_swapsingle.py``: the face of BGR image ``a`` (five points ``kps_a``)
    into BGR image ``b``; returns the BGR result and the latent identity."""
    with torch.no_grad():
        img_a_align_crop, _ = detect_crop(img_a_whole, kps_a, crop_size)
        img_a_align_crop_pil = Image.fromarray(cv2.cvtColor(img_a_align_crop[0], cv2.COLOR_BGR2RGB))
        img_a = transformer_Arcface(img_a_align_crop_pil)
        img_id = img_a.view(-1, img_a.shape[0], img_a.shape[1], img_a.shape[2])
        img_id_downsample = F.interpolate(img_id, size=(112, 112))
        latend_id = net_arc(img_id_downsample)
        latend_id = F.normalize(latend_id, p=2, dim=1)
        img_b_align_crop_list, b_mat_list = detect_crop(img_b_whole, kps_b, crop_size)
        swap_result_list, b_align_crop_tenor_list = [], []
        for b_align_crop in img_b_align_crop_list:
            b_align_crop_tenor = _totensor(cv2.cvtColor(b_align_crop, cv2.COLOR_BGR2RGB))[None, ...]
            swap_result = net_g(b_align_crop_tenor, latend_id)[0]  # fsModel.forward at test
            swap_result_list.append(swap_result)
            b_align_crop_tenor_list.append(b_align_crop_tenor)
        result = reverse2wholeimage(
            b_align_crop_tenor_list, swap_result_list, b_mat_list, crop_size, img_b_whole
        )
    return result, latend_id
