"""A test-side restatement of the Dual-Generator face reenactment release
(AvLab-CV/Dual_Generator_Face_Reenactment), written from reading it.

It exists only to check fairforge's ``dualreen`` official backend: the modules keep the
release's class and attribute names, order of operations and quirks (the IDSG's unused
discriminator and classifier saved in its checkpoint, the generator's unused ``to_rgb_lm``,
the VGG-Face features read through torchvision's VGG with the ImageNet normalisation), and the
pipeline functions follow ``demo.py`` (``get_arcface``, ``turn_eye``, ``show_map``,
``toTensor``, ``tensor_to_np`` and the two solvers' ``sample``/``extract``) for the released
configuration (RFG: 256 px, style 128, ``w_hpf`` 0, no noise, no masks, perceptual output;
IDSG: the landmark transformer with the VGG encoder, dataset vox1). Only what the demo runs on
the CUDA device is restated: ``show_map`` returns its drawing on the CPU, and the byte cast of
the drawing saturates there (``mul(255).byte()`` of 255*255 gives 255), written as a clamp.

:func:`random_release` writes the three released files with random weights in the release's
layout (``CheckpointIO`` dicts of state dicts, Albanie's VGG-Face names) and returns the
method options that point at them.
"""

from __future__ import annotations

import copy
import functools
import math
import warnings
from collections import OrderedDict
from pathlib import Path

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from skimage import transform as trans
from torch import nn
from torchvision.models import vgg

from official_support import empty, loaded, random_state

# --- core_IDSG/model_lm_talking_tran.py --------------------------------------------------


class Lm_linear_encoder(nn.Module):
    def __init__(self, input_size=136, hidden_size=136, output_size=136):
        super().__init__()
        encode = []
        dim_in, dim_out = input_size, hidden_size
        for _ in range(5):
            encode += [nn.Linear(dim_in, dim_out)]
            encode += [nn.LeakyReLU(0.2)]
            dim_in = dim_out
        encode += [nn.Linear(dim_out, output_size)]
        self.main = nn.Sequential(*encode)

    def forward(self, x):
        return self.main(x)


class Linear_decoder(nn.Module):
    def __init__(self, input_size=4232, hidden_size=512, output_size=136):
        super().__init__()
        decode = []
        dim_in, dim_out = input_size, hidden_size
        for _ in range(5):
            decode += [nn.Linear(dim_in, dim_out)]
            decode += [nn.LeakyReLU(0.2)]
            dim_in = dim_out
        decode += [nn.Linear(dim_out, output_size)]
        self.main = nn.Sequential(*decode)

    def forward(self, x, y):
        return torch.sigmoid(self.main(torch.cat((x, y), dim=1)))


class Linear_discriminator(nn.Module):
    def __init__(self, input_size=136, hidden_size=136, output_size_1=1, output_size_2=150):
        super().__init__()
        discriminator = []
        dim_in, dim_out = input_size, hidden_size
        for _ in range(5):
            discriminator += [nn.Linear(dim_in, dim_out)]
            discriminator += [nn.LeakyReLU(0.2)]
            dim_in = dim_out
        self.main = nn.Sequential(*discriminator)
        self.main_2 = nn.Sequential(nn.Linear(dim_out, output_size_1))


class Linear_classfier(nn.Module):
    def __init__(self, input_size=136, hidden_size=136, output_size_1=1, output_size_2=12606):
        super().__init__()
        discriminator = []
        dim_in, dim_out = input_size, hidden_size
        for _ in range(5):
            discriminator += [nn.Linear(dim_in, dim_out)]
            discriminator += [nn.LeakyReLU(0.2)]
            dim_in = dim_out
        self.main = nn.Sequential(*discriminator)
        self.main_3 = nn.Sequential(nn.Linear(dim_out, output_size_2))


IDSG_NETS = {
    "linear_decoder": Linear_decoder,
    "lm_linear_encoder": Lm_linear_encoder,
    "linear_discriminator": Linear_discriminator,
    "linear_classfier": functools.partial(Linear_classfier, output_size_2=1454),  # vox1
}


def build_model_idsg():
    """``build_model_idsg`` with ``transformer`` on and ``dataset`` vox1: the _ema copies."""
    return {name: copy.deepcopy(build()) for name, build in IDSG_NETS.items()}


# --- core/model_lm_talking.py ----------------------------------------------------------


# the release's blocks share one default activation object (a default argument)
_LEAKY = nn.LeakyReLU(0.2)


class ResBlk(nn.Module):
    def __init__(self, dim_in, dim_out, actv=_LEAKY, normalize=False, downsample=False):
        super().__init__()
        self.actv = actv
        self.normalize = normalize
        self.downsample = downsample
        self.learned_sc = dim_in != dim_out
        self._build_weights(dim_in, dim_out)

    def _build_weights(self, dim_in, dim_out):
        self.conv1 = nn.Conv2d(dim_in, dim_in, 3, 1, 1)
        self.conv2 = nn.Conv2d(dim_in, dim_out, 3, 1, 1)
        if self.normalize:
            self.norm1 = nn.InstanceNorm2d(dim_in, affine=True)
            self.norm2 = nn.InstanceNorm2d(dim_in, affine=True)
        if self.learned_sc:
            self.conv1x1 = nn.Conv2d(dim_in, dim_out, 1, 1, 0, bias=False)

    def _shortcut(self, x):
        if self.learned_sc:
            x = self.conv1x1(x)
        if self.downsample:
            x = F.avg_pool2d(x, 2)
        return x

    def _residual(self, x):
        if self.normalize:
            x = self.norm1(x)
        x = self.actv(x)
        x = self.conv1(x)
        if self.downsample:
            x = F.avg_pool2d(x, 2)
        if self.normalize:
            x = self.norm2(x)
        x = self.actv(x)
        x = self.conv2(x)
        return x

    def forward(self, x):
        x = self._shortcut(x) + self._residual(x)
        return x / math.sqrt(2)


class AdaIN(nn.Module):
    def __init__(self, style_dim, num_features):
        super().__init__()
        self.norm = nn.InstanceNorm2d(num_features, affine=False)
        self.fc = nn.Linear(style_dim, num_features * 2)

    def forward(self, x, s):
        h = self.fc(s)
        h = h.view(h.size(0), h.size(1), 1, 1)
        gamma, beta = torch.chunk(h, chunks=2, dim=1)
        return (1 + gamma) * self.norm(x) + beta


class AdainResBlk(nn.Module):
    def __init__(self, dim_in, dim_out, style_dim=64, w_hpf=0, actv=_LEAKY, upsample=False):
        super().__init__()
        self.w_hpf = w_hpf
        self.actv = actv
        self.upsample = upsample
        self.use_noise = False
        self.learned_sc = dim_in != dim_out
        self._build_weights(dim_in, dim_out, style_dim)

    def _build_weights(self, dim_in, dim_out, style_dim=64):
        self.conv1 = nn.Conv2d(dim_in, dim_out, 3, 1, 1)
        self.conv2 = nn.Conv2d(dim_out, dim_out, 3, 1, 1)
        self.norm1 = AdaIN(style_dim, dim_in)
        self.norm2 = AdaIN(style_dim, dim_out)
        if self.learned_sc:
            self.conv1x1 = nn.Conv2d(dim_in, dim_out, 1, 1, 0, bias=False)

    def _shortcut(self, x):
        if self.upsample:
            x = F.interpolate(x, scale_factor=2, mode="nearest")
        if self.learned_sc:
            x = self.conv1x1(x)
        return x

    def _residual(self, x, s):
        x = self.norm1(x, s)
        x = self.actv(x)
        if self.upsample:
            x = F.interpolate(x, scale_factor=2, mode="nearest")
        x = self.conv1(x)
        x = self.norm2(x, s)
        x = self.actv(x)
        x = self.conv2(x)
        return x

    def forward(self, x, s):
        out = self._residual(x, s)
        if self.w_hpf == 0:
            out = (out + self._shortcut(x)) / math.sqrt(2)
        return out


class Generator(nn.Module):
    def __init__(self, img_size=256, style_dim=64, max_conv_dim=512, w_hpf=1):
        super().__init__()
        dim_in = 2**14 // img_size
        self.img_size = img_size
        self.from_rgb = nn.Conv2d(3, dim_in, 3, 1, 1)
        self.encode = nn.ModuleList()
        self.decode = nn.ModuleList()
        self.to_rgb = nn.Sequential(
            nn.InstanceNorm2d(dim_in, affine=True), nn.LeakyReLU(0.2), nn.Conv2d(dim_in, 3, 1, 1, 0)
        )
        self.to_rgb_lm = nn.Sequential(
            nn.InstanceNorm2d(dim_in, affine=True), nn.LeakyReLU(0.2), nn.Conv2d(dim_in, 4, 1, 1, 0)
        )
        repeat_num = int(np.log2(img_size)) - 4
        if w_hpf > 0:
            repeat_num += 1
        for _ in range(repeat_num):
            dim_out = min(dim_in * 2, max_conv_dim)
            self.encode.append(ResBlk(dim_in, dim_out, normalize=True, downsample=True))
            self.decode.insert(
                0, AdainResBlk(dim_out, dim_in, style_dim, w_hpf=w_hpf, upsample=True)
            )
            dim_in = dim_out
        for _ in range(4):
            self.decode.insert(0, AdainResBlk(dim_out, dim_out, style_dim, w_hpf=w_hpf))

    def forward(self, x, s, masks=None, loss_select="perceptual"):
        x = self.from_rgb(x)
        for block in self.encode:
            x = block(x)
        for block in self.decode:
            x = block(x, s)
        if loss_select == "perceptual":
            return torch.sigmoid(self.to_rgb(x))
        raise NotImplementedError(loss_select)


class StyleEncoder(nn.Module):
    def __init__(self, img_size=256, style_dim=64, num_domains=2, self_att=False, max_conv_dim=512):
        super().__init__()
        dim_in = 2**14 // img_size
        blocks = [nn.Conv2d(3, dim_in, 3, 1, 1)]
        repeat_num = int(np.log2(img_size)) - 2
        for _ in range(repeat_num):
            dim_out = min(dim_in * 2, max_conv_dim)
            blocks += [ResBlk(dim_in, dim_out, downsample=True)]
            dim_in = dim_out
        blocks += [nn.LeakyReLU(0.2)]
        blocks += [nn.Conv2d(dim_out, dim_out, 4, 1, 0)]
        blocks += [nn.LeakyReLU(0.2)]
        self.shared = nn.Sequential(*blocks)
        self.fc = nn.Linear(dim_out, style_dim)

    def forward(self, x):
        h = self.shared(x)
        h = h.view(h.size(0), -1)
        return self.fc(h)


RFG_NETS = {
    "generator": functools.partial(Generator, 256, 128, w_hpf=0),
    "style_encoder": functools.partial(StyleEncoder, 256, 128, 2, False),
}


def build_model_rfg():
    """``build_model`` with the demo's arguments (no id_embed, no pix2pix, no self_att)."""
    return {name: copy.deepcopy(build()) for name, build in RFG_NETS.items()}


# --- network/vgg.py and network/loss.py ---------------------------------------------------

# vgg_face_state_dict: Albanie's names -> torchvision's VGG-16 positions
_VGG_NAMES = OrderedDict(
    [
        ("conv1_1", "features.0"),
        ("conv1_2", "features.2"),
        ("conv2_1", "features.5"),
        ("conv2_2", "features.7"),
        ("conv3_1", "features.10"),
        ("conv3_2", "features.12"),
        ("conv3_3", "features.14"),
        ("conv4_1", "features.17"),
        ("conv4_2", "features.19"),
        ("conv4_3", "features.21"),
        ("conv5_1", "features.24"),
        ("conv5_2", "features.26"),
        ("conv5_3", "features.28"),
        ("fc6", "classifier.0"),
        ("fc7", "classifier.3"),
        ("fc8", "classifier.6"),
    ]
)


def _vgg16():
    return vgg.VGG(vgg.make_layers(vgg.cfgs["D"], batch_norm=False), num_classes=2622)


def vgg_face(default):
    """``vgg_face(pretrained=True)`` with the file's dict passed in instead of read (the
    network built without its random initialisation, which loading overwrites)."""
    state = OrderedDict()
    for theirs, ours in _VGG_NAMES.items():
        state[ours + ".weight"] = default[theirs + ".weight"]
        state[ours + ".bias"] = default[theirs + ".bias"]
    return loaded(_vgg16, state)


class VGG_Activations_2(nn.Module):
    def __init__(self, vgg_network, feature_idx):
        super().__init__()
        features_2 = list(vgg_network.features)
        features_2.append(vgg_network.avgpool)
        features_3 = list(vgg_network.classifier)
        self.features = nn.ModuleList(list(vgg_network.features)).eval()
        self.features_2 = nn.ModuleList(features_2).eval()
        self.features_3 = nn.ModuleList(features_3).eval()
        self.idx_list = feature_idx

    def forward(self, x):
        for model in self.features_2:
            x = model(x)
        x = x.view(-1, 512 * 7 * 7)
        for ii, model in enumerate(self.features_3):
            x = model(x)
            if ii == 5:
                return x


class vgg_feature(nn.Module):
    def __init__(self, default):
        super().__init__()
        self.VGG_FACE_AC = VGG_Activations_2(vgg_face(default), [1, 6, 11, 18, 25])

    def forward(self, x):
        mean = torch.Tensor([0.485, 0.456, 0.406]).reshape([1, 3, 1, 1]).to(x.device)
        std = torch.Tensor([0.229, 0.224, 0.225]).reshape([1, 3, 1, 1]).to(x.device)
        return self.VGG_FACE_AC((x - mean) / std)


# --- demo.py ---------------------------------------------------------------------------


def toTensor(img):
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    img = torch.from_numpy(img.transpose((2, 0, 1)))
    return img.float().div(255).unsqueeze(0)


def tensor_to_np(tensor):
    img = tensor.mul(255).byte()
    return img.cpu().numpy().squeeze(0).transpose((1, 2, 0))


def turn_eye(fake_lm, x2_label):
    N, C = fake_lm.size()

    def eye(t, a, b):
        return torch.abs(
            (
                (t[:, 2 * a : 2 * a + 1] - t[:, 2 * b : 2 * b + 1]) ** 2
                + (t[:, 2 * a + 1 : 2 * a + 2] - t[:, 2 * b + 1 : 2 * b + 2]) ** 2
            )
            ** 0.5
        )

    ratio = eye(fake_lm, 36, 39) / eye(x2_label, 36, 39)

    def vec(a, b, axis):
        return (
            x2_label[:, 2 * a + axis : 2 * a + axis + 1]
            - x2_label[:, 2 * b + axis : 2 * b + axis + 1]
        )

    real_left_eye_1_x, real_left_eye_1_y = vec(37, 41, 0), vec(37, 41, 1)
    real_left_eye_2_x, real_left_eye_2_y = vec(38, 40, 0), vec(38, 40, 1)
    real_right_eye_1_x, real_right_eye_1_y = vec(43, 47, 0), vec(43, 47, 1)
    real_right_eye_2_x, real_right_eye_2_y = vec(44, 46, 0), vec(44, 46, 1)
    for i in range(0, N):
        fake_lm[i, 74:75] = fake_lm[i, 82:83] + real_left_eye_1_x[i] * ratio[i]
        fake_lm[i, 75:76] = fake_lm[i, 83:84] + real_left_eye_1_y[i] * ratio[i]
        fake_lm[i, 76:77] = fake_lm[i, 80:81] + real_left_eye_2_x[i] * ratio[i]
        fake_lm[i, 77:78] = fake_lm[i, 81:82] + real_left_eye_2_y[i] * ratio[i]
        fake_lm[i, 86:87] = fake_lm[i, 94:95] + real_right_eye_1_x[i] * ratio[i]
        fake_lm[i, 87:88] = fake_lm[i, 95:96] + real_right_eye_1_y[i] * ratio[i]
        fake_lm[i, 88:89] = fake_lm[i, 92:93] + real_right_eye_2_x[i] * ratio[i]
        fake_lm[i, 89:90] = fake_lm[i, 93:94] + real_right_eye_2_y[i] * ratio[i]
    return fake_lm


def _line(img_3, lm_x, lm_y, a, b):
    p = (int(float(lm_x[a])), int(float(lm_y[a])))
    q = (int(float(lm_x[b])), int(float(lm_y[b])))
    cv2.line(img_3, p, q, (255, 255, 255), 2)


def show_map(landmark):
    N, C = landmark.size()
    img = torch.from_numpy(np.ones((N, 3, 256, 256)))
    for i in range(0, N):
        img_3 = np.zeros((256, 256, 3))
        lm_x = [landmark[i, 2 * num] * 256 for num in range(68)]
        lm_y = [landmark[i, 2 * num + 1] * 256 for num in range(68)]

        def line(a, b, img_3=img_3, lm_x=lm_x, lm_y=lm_y):
            _line(img_3, lm_x, lm_y, a, b)

        diff_1 = int(float(lm_x[42])) - int(float(lm_x[36]))
        diff_2 = int(float(lm_x[45])) - int(float(lm_x[39]))
        if diff_1 <= 30 and int(float(lm_x[30])) > int(float(lm_x[42])):
            for first, last in ((0, 12), (17, 21), (27, 30), (31, 33), (36, 41)):
                for n in range(first, last):
                    line(n, n + 1)
            line(36, 41)
            for n in range(48, 51):
                line(n, n + 1)
            line(51, 62)
            for n in range(60, 62):
                line(n, n + 1)
            line(60, 67)
            line(66, 67)
            line(57, 66)
            for n in range(57, 59):
                line(n, n + 1)
            line(48, 59)
        elif diff_2 <= 30 and int(float(lm_x[30])) < int(float(lm_x[42])):
            for first, last in ((4, 16), (22, 26), (27, 30), (33, 35), (42, 47)):
                for n in range(first, last):
                    line(n, n + 1)
            line(42, 47)
            for n in range(51, 57):
                line(n, n + 1)
            line(51, 62)
            for n in range(62, 66):
                line(n, n + 1)
            line(66, 57)
        else:
            for first, last in ((0, 16), (17, 21), (22, 26), (27, 30), (31, 35), (36, 41)):
                for n in range(first, last):
                    line(n, n + 1)
            line(36, 41)
            for n in range(42, 47):
                line(n, n + 1)
            line(42, 47)
            for n in range(48, 59):
                line(n, n + 1)
            line(48, 59)
            for n in range(60, 67):
                line(n, n + 1)
            line(60, 67)
        img[i] = torch.from_numpy(img_3.transpose(2, 0, 1))  # transforms.ToTensor of floats
    return img.float()


def get_arcface(rimg, shape):
    landmark = np.array([[p[0], p[1]] for p in shape[0]])
    src = np.array(
        [
            [30.2946 * 2, 51.6963 * 2],
            [65.5318 * 2, 51.5014 * 2],
            [48.0252 * 2, 71.7366 * 2],
            [33.5493 * 2, 92.3655 * 2],
            [62.7299 * 2, 92.2041 * 2],
        ],
        dtype=np.float32,
    )
    src[:, 0] += 31.9721
    landmark5 = np.zeros((5, 2), dtype=np.float32)
    landmark5[0] = (landmark[36] + landmark[39]) / 2
    landmark5[1] = (landmark[42] + landmark[45]) / 2
    landmark5[2] = landmark[30]
    landmark5[3] = landmark[48]
    landmark5[4] = landmark[54]
    tform = trans.SimilarityTransform()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # scikit-image 0.26 deprecates estimate
        tform.estimate(landmark5, src)
    M = tform.params[0:2, :]
    img_crop = cv2.warpAffine(rimg, M, (256, 256), borderValue=0.0)
    for i in range(68):
        pts = np.float32(landmark[i]).reshape([-1, 2])
        pts = np.hstack([pts, np.ones([len(pts), 1])]).T
        landmark[i] = np.dot(M, pts).squeeze()
    LM = []
    for LM_crop in landmark:
        LM.append(LM_crop[0] / 256)
        LM.append(LM_crop[1] / 256)
    return img_crop, M, LM


def demo_reenact(nets_idsg, nets_rfg, vgg_encode, source_bgr, source_lm, driver_bgr, driver_lm):
    """One frame of demo.py, the source aligned by ``get_arcface`` like the driver (the demo
    reads sources already cropped): returns the drawing (N, 3, 256, 256), the target
    landmarks after ``turn_eye`` and the generated face before ``tensor_to_np``."""
    img_crop, _, _ = get_arcface(source_bgr, [source_lm])
    source_all = toTensor(img_crop)
    _, _, shape = get_arcface(driver_bgr, [driver_lm])
    shape_all = torch.FloatTensor(shape)[None]
    with torch.no_grad():
        source_style_code = nets_rfg["style_encoder"](source_all)  # Solver.extract
        fea_id_1 = vgg_encode(source_all)  # Solver_2.sample
        fea_lm_1 = nets_idsg["lm_linear_encoder"](shape_all)
        fake_1 = nets_idsg["linear_decoder"](fea_lm_1, fea_id_1)
        fake_1_eye = turn_eye(fake_1, shape_all)
        fake_lm = show_map(fake_1_eye)
        # tensor_to_np and toTensor round trip of the drawing, saturating as on CUDA
        lm_fake = fake_lm[0].unsqueeze(0).mul(255).clamp(0, 255).byte()
        lm_fake = lm_fake.numpy().squeeze(0).transpose((1, 2, 0))
        reference_all = toTensor(lm_fake)
        img_fake = nets_rfg["generator"](reference_all, source_style_code, masks=None)
    return {"drawing": reference_all, "landmarks": fake_1_eye, "face": img_fake}


# --- random weights in the released layout ------------------------------------------------

RFG_FILE = "expr/checkpoints/501500_nets_ema.ckpt"
IDSG_FILE = "expr_lm/checkpoints/30000_nets_ema.ckpt"
VGG_FILE = "vgg_face_dag.pth"


@functools.lru_cache(maxsize=2)
def random_states(seed: int = 0) -> dict:
    """What ``torch.load`` gives of the three released files, with random weights:
    ``{"rfg": {net: state}, "idsg": {net: state}, "vgg": Albanie's flat state}``."""
    rfg = {n: random_state(empty(b), seed + i) for i, (n, b) in enumerate(RFG_NETS.items())}
    idsg = {n: random_state(empty(b), seed + 10 + i) for i, (n, b) in enumerate(IDSG_NETS.items())}
    flat = random_state(empty(_vgg16), seed + 20)
    default = OrderedDict()
    for theirs, ours in _VGG_NAMES.items():
        default[theirs + ".weight"] = flat[ours + ".weight"]
        default[theirs + ".bias"] = flat[ours + ".bias"]
    return {"rfg": rfg, "idsg": idsg, "vgg": default}


def random_release(tmp_path, seed: int = 0) -> dict:
    """The three released files, random weights, in the release's layout (``CheckpointIO``
    dicts of state dicts; Albanie's VGG-Face names) under ``tmp_path``; returns the
    ``dualreen`` official options that point at them."""
    root = Path(tmp_path) / "Dual_Generator_Face_Reenactment"
    states = random_states(seed)
    paths = {"rfg": root / RFG_FILE, "idsg": root / IDSG_FILE, "vgg": root / VGG_FILE}
    for key, path in paths.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(states[key], path)
    return {f"{key}_path": str(path) for key, path in paths.items()}


def load_release(states: dict):
    """The release's own loading (``CheckpointIO.load``: a strict ``load_state_dict`` per
    network; ``vgg_face_state_dict``) of the files' contents: (IDSG nets, RFG nets,
    vgg_feature)."""
    idsg = {n: loaded(b, states["idsg"][n]) for n, b in IDSG_NETS.items()}
    rfg = {n: loaded(b, states["rfg"][n]) for n, b in RFG_NETS.items()}
    return idsg, rfg, vgg_feature(states["vgg"]).eval()
