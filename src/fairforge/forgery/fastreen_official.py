"""FastReen with the authors' released networks (``forgery.backends.fastreen: official``).

FairFD §3.4 makes its "FastReen" fakes with reference [23]. The copy in shared/papers lacks
the reference list; the paper's full text (the AAAI 2025 version of arXiv 2407.14367, "Thinking
Racial Bias in Fair Forgery Detection", read from a public full-text copy) lists it as: "[23]
Egor Zakharov, Aleksei Ivakhnenko, Aliaksandra Shysheya, and Victor Lempitsky. Fast bi-layer
neural synthesis of one-shot realistic head avatars. In Computer Vision-ECCV 2020, Part XII,
pages 524-540", between "[22] ... Simswap" and "[24] ... Dual-generator face reenactment",
the numbering of FairFD's text (FaceSwap [21], SimSwap [22], FastReen [23], DualReen [24],
MaskGAN [25]).
Its release is github.com/saic-violet/bilayer-model; its README publishes ``pretrained_weights``
and ``runs`` in one Google Drive folder (id ``11SwIYnk3KY61d8qa17Nlb0BN9j57B3L6``), which
``infer.py``'s ``InferenceWrapper`` reads as

- ``runs/vc2-hq_adrianb_paper_main/checkpoints/2225_identity_embedder.pth``,
  ``2225_texture_generator.pth``, ``2225_keypoints_embedder.pth`` and
  ``2225_inference_generator.pth`` (options ``identity_embedder_path``,
  ``texture_generator_path``, ``keypoints_embedder_path``, ``inference_generator_path``);
- ``runs/vc2-hq_adrianb_paper_enhancer/checkpoints/1225_texture_enhancer.pth``
  (``texture_enhancer_path``);
- ``runs/vc2-hq_adrianb_paper_enhancer/args.txt`` (``args_path``): the arguments the networks
  are built with (``key: value`` lines; fairforge reads the sizes and the options the
  pipeline depends on, and refuses layer types other than the released ones);
- ``pretrained_weights/graphonomy/pretrained_model.pth`` (``graphonomy_path``): the Graphonomy
  human parser that cuts the source person out.

The five network files are state dicts saved with spectral normalisation (``weight_orig``,
``weight_u``, ``weight_v``); fairforge folds it as the release removes it before inference
(:func:`~fairforge.forgery.nets.bilayer.fold_spectral_norm`). Graphonomy's file is a state
dict whose keys take Graphonomy's ``load_source_model`` renaming
(:func:`~fairforge.forgery.nets.graphonomy.release_key`); keys the model does not have are
skipped, as there, and a missing one is an error (the release would leave it random). All are
read with ``torch.load(weights_only=True)``; no conversion.

The pipeline is ``InferenceWrapper.forward`` for one source and one driver frame, with the
README's inference arguments (no masks on the outputs, the texture enhancer on):

1. each face is cut the release's way: a square of twice the landmarks' extent around
   their box centre raised by a sixth of the extent (PIL crop, black outside the image),
   resized to 256 px bicubically, in [-1, 1]; its 68 keypoints in [-1, 1] of that square;
2. the source's stickman (68-point parts in the release's colours, 2 px) and its Graphonomy
   foreground (1 - background probability, eroded by a 5 px disk) go to the identity
   embedder, which sees the source with its background set to -1;
3. the texture generator and the inference generator (its norms and skips predicted from
   the embeddings) render the driver's pose: UVs into the texture, a low-frequency image
   and a segmentation; the source pose is rendered too, and the texture enhancer refines
   the texture by four gradient steps on the source's reconstruction;
4. the image is the low-frequency part plus the enhanced texture sampled at the UVs.

What fairforge adds, since the release stops at the 256 px image: the image, clamped to
[-1, 1], and its predicted segmentation are mapped onto the source's square (the square of
step 1, the pixel-centre convention of the bicubic resize) and composited through the
segmentation, as the release's notebook composites its output over a white page; the source
crop outside it is unchanged.

Differences from the release, as far as the crop allows:

- landmarks: the release runs face-alignment's 2D FAN (``flip_input=True``) on each frame;
  fairforge passes its configured 68 landmarks of the crops (the same 68-point scheme; with
  ``faces.landmarks: fan`` the same network, without the flip averaging);
- the frames are fairforge's aligned crops, so a square reaching past the crop is black
  there where the release would see more of the photograph;
- the driver's image pixels are not used: at inference the release reads only its
  keypoints (it parses the driver too, for outputs it does not use).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np

from .base import (
    FORGERY_METHODS,
    ForgeryError,
    ForgeryMethod,
    ForgeryResult,
    composite,
)
from .releases import ReleaseFile

RELEASE = (
    "github.com/saic-violet/bilayer-model (README: pretrained_weights and runs, "
    "drive.google.com/drive/folders/11SwIYnk3KY61d8qa17Nlb0BN9j57B3L6)"
)
MAIN = "runs/vc2-hq_adrianb_paper_main/checkpoints"
ENHANCER = "runs/vc2-hq_adrianb_paper_enhancer"
NETWORKS = (
    "identity_embedder",
    "texture_generator",
    "keypoints_embedder",
    "inference_generator",
    "texture_enhancer",
)

# args.txt values fairforge's networks are written for (the released training scripts')
RELEASED_LAYERS = {
    "emb_norm_layer_type": "none",
    "emb_activation_type": "leakyrelu",
    "emb_downsampling_type": "avgpool",
    "emb_no_stickman": False,
    "tex_norm_layer_type": "ada_spade_bn",
    "tex_pixelwise_bias_type": "none",
    "tex_skip_layer_type": "ada_conv",
    "tex_upsampling_type": "nearest",
    "tex_activation_type": "leakyrelu",
    "inf_norm_layer_type": "ada_bn",
    "inf_skip_layer_type": "ada_conv",
    "inf_upsampling_type": "nearest",
    "inf_activation_type": "leakyrelu",
    "inf_pred_segmentation": True,
    "pse_norm_layer_type": "none",
    "pse_activation_type": "leakyrelu",
    "pse_use_harmonic_enc": False,
    "pse_in_channels": 136,
    "enh_norm_layer_type": "none",
    "enh_activation_type": "leakyrelu",
    "enh_downsampling_type": "avgpool",
    "enh_upsampling_type": "nearest",
    "enh_guiding_rgb_loss_type": "sse",
    "num_keypoints": 68,
    "num_source_frames": 1,
    "image_size": 256,
}

# draw_stickmen's 68-point parts: (points, closed, RGB colour)
STICKMAN = (
    (list(range(0, 17)), False, (255, 255, 255)),
    (list(range(17, 22)), False, (255, 0, 0)),
    (list(range(22, 27)), False, (0, 255, 0)),
    (list(range(27, 31)) + [30, 33], False, (0, 0, 255)),
    (list(range(31, 36)), False, (0, 0, 255)),
    (list(range(36, 42)), True, (255, 0, 255)),
    (list(range(42, 48)), True, (0, 255, 255)),
    (list(range(48, 60)), True, (255, 255, 0)),
    (list(range(60, 68)), True, (255, 255, 0)),
)


def read_args(path: str | Path) -> dict:
    """An ``args.txt`` as the release parses it: ``key: value`` lines, digits as ints,
    numbers as floats, True/False as booleans, the rest as strings."""
    out = {}
    for line in Path(path).read_text().splitlines():
        if ": " not in line:
            continue
        key, value = line.split(": ", 1)
        if value.isdigit():
            out[key] = int(value)
        elif value in ("True", "False"):
            out[key] = value == "True"
        else:
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = value
    return out


def check_args(args: dict, path: str) -> None:
    """Refuse an ``args.txt`` that builds layers other than the released ones."""
    wrong = [
        f"{key}={args[key]!r} (released: {value!r})"
        for key, value in RELEASED_LAYERS.items()
        if key in args and args[key] != value
    ]
    postfix = str(args.get("folder_postfix", "2d"))
    if "2d" not in postfix and "3d" not in postfix:
        wrong.append(f"folder_postfix={postfix!r} (68-point keypoints need '2d' or '3d')")
    if wrong:
        raise ValueError(
            f"fastreen backend 'official': {path} sets {', '.join(wrong)}; fairforge runs the "
            "released bi-layer configuration only"
        )


def face_square(lm: np.ndarray) -> tuple[np.ndarray, int]:
    """The release's crop square: (centre (int x, y), half side) from 68 landmarks."""
    pose = np.asarray(lm, np.float32)
    center = ((pose.min(0) + pose.max(0)) / 2).round().astype(int)
    size = int(max(pose[:, 0].max() - pose[:, 0].min(), pose[:, 1].max() - pose[:, 1].min()))
    if size < 2:
        raise ForgeryError("fastreen: the landmarks span less than 2 px")
    center[1] -= size // 6
    return center, size


def square_pose(lm: np.ndarray) -> tuple[np.ndarray, tuple[int, int, int]]:
    """The release's crop square of a face and its 68 keypoints in it: (136 float32 values
    in [-1, 1], (x0, y0, side) of the square)."""
    center, size = face_square(lm)
    x0, y0 = int(center[0] - size), int(center[1] - size)
    pose = (np.asarray(lm, np.float32) - np.array([x0, y0])).astype(np.float32)
    pose = pose / float(2 * size)
    return ((pose - 0.5) * 2).reshape(-1), (x0, y0, 2 * size)


def cut_face(img: np.ndarray, box: tuple[int, int, int], image_size: int) -> np.ndarray:
    """preprocess_data's image: the square ``box`` of ``img`` (black outside it), resized to
    ``image_size`` bicubically by PIL, uint8."""
    from PIL import Image

    x0, y0, side = box
    square = Image.fromarray(img).crop((x0, y0, x0 + side, y0 + side))
    return np.asarray(square.resize((image_size, image_size), Image.BICUBIC))


def draw_stickman(pose: np.ndarray, image_size: int, thickness: int) -> np.ndarray:
    """draw_stickmen for one pose (136 values in [-1, 1]): uint8 RGB on a background of 1."""
    xy = ((pose.reshape(-1, 2) + 1) / 2 * image_size).astype(np.int32)
    canvas = np.ones((image_size, image_size, 3), np.uint8)
    for points, closed, colour in STICKMAN:
        cv2.polylines(canvas, [xy[points][:, None]], closed, colour, thickness=thickness)
    return canvas


def erosion_disk(size: int = 5) -> np.ndarray:
    """SegmentationWrapper's erosion kernel: the cells of a ``size`` grid inside its disk."""
    r = np.arange(-size // 2 + 1, size // 2 + 1)
    return ((r[None, :] ** 2 + r[:, None] ** 2) < (size / 2.0) ** 2).astype(np.uint8)


@FORGERY_METHODS.register("fastreen/official")
class FastReenactmentOfficial(ForgeryMethod):
    """The bi-layer release (Zakharov et al., ECCV 2020); see the module docstring."""

    kept = "source"
    needs_target = True
    release_files = (
        *(
            ReleaseFile(
                f"{name}_path",
                f"{'1225' if name == 'texture_enhancer' else '2225'}_{name}.pth",
                RELEASE,
                f"the {name.replace('_', ' ')} "
                f"({ENHANCER + '/checkpoints' if name == 'texture_enhancer' else MAIN})",
            )
            for name in NETWORKS
        ),
        ReleaseFile("args_path", "args.txt", RELEASE, f"the model's arguments ({ENHANCER})"),
        ReleaseFile(
            "graphonomy_path",
            "pretrained_model.pth",
            RELEASE,
            "the Graphonomy human parser (pretrained_weights/graphonomy)",
        ),
    )
    defaults = {
        **{f"{name}_path": None for name in NETWORKS},
        "args_path": None,
        "graphonomy_path": None,
        "device": "cpu",  # or "cuda"
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        paths = self.check_options(self.options)
        import torch

        from fairforge.checkpoints import read_state_dict

        from .nets import bilayer, graphonomy, load_released

        self.torch = torch
        device = self.options["device"]
        self.device = torch.device(device)
        args = read_args(paths["args_path"])
        check_args(args, paths["args_path"])
        self.cfg = cfg = bilayer.BilayerConfig.from_args(args)
        self.thickness = int(args.get("stickmen_thickness", 2))
        self.mask_source = bool(args.get("emb_apply_masks", True))
        builds = {
            "identity_embedder": bilayer.IdentityEmbedder,
            "texture_generator": bilayer.TextureGenerator,
            "keypoints_embedder": bilayer.PoseEmbedder,
            "inference_generator": bilayer.InferenceGenerator,
            "texture_enhancer": bilayer.TextureEnhancer,
        }
        self.nets = {}
        for name, build in builds.items():
            option = f"{name}_path"
            what = f"fastreen: {name} ({paths[option]})"
            state = bilayer.fold_spectral_norm(read_state_dict(paths[option], what, ()))
            self.nets[name] = load_released(lambda b=build: b(cfg), state, what, device)
        what = f"fastreen: Graphonomy ({paths['graphonomy_path']})"
        raw = read_state_dict(paths["graphonomy_path"], what, ())
        with torch.device("meta"):
            keys = set(graphonomy.Graphonomy().state_dict())
        state = {}
        for key, value in raw.items():
            name = graphonomy.release_key(key)
            if name in keys:  # load_source_model skips keys the model lacks
                state[name] = value
        self.parser = load_released(graphonomy.Graphonomy, state, what, device)
        self.kernel = erosion_disk()

    # ------------------------------------------------------------------ the release's steps

    def _tensor(self, uint8_img: np.ndarray):
        t = self.torch.from_numpy(np.ascontiguousarray(uint8_img.transpose(2, 0, 1)))
        return ((t.float() / 255.0 - 0.5) * 2)[None].to(self.device)

    def segment(self, imgs):
        """SegmentationWrapper: (1, 3, S, S) RGB in [-1, 1] -> (1, 1, S, S) foreground."""
        torch = self.torch
        probs = torch.softmax(self.parser(imgs[:, [2, 1, 0]]), 1)
        fg = (1 - probs[:, 0]).cpu().numpy()
        eroded = np.stack([cv2.erode(s, self.kernel, iterations=1) for s in fg])
        return torch.from_numpy(eroded)[:, None].to(self.device)

    def generate(self, source_img, source_lm, target_lm) -> dict:
        """The release's networks on one pair: the source square, its keypoints, stickman and
        foreground, the driver's keypoints, the texture before and after the enhancer, and the
        driver-posed image (1, 3, S, S) in about [-1, 1] with its segmentation (1, 1, S, S)."""
        torch, cfg, nets = self.torch, self.cfg, self.nets
        size = cfg.image_size
        source_pose, box = square_pose(source_lm)
        target_pose, _ = square_pose(target_lm)
        square = cut_face(source_img, box, size)
        stickman = draw_stickman(source_pose, size, self.thickness)
        with torch.no_grad():
            source = self._tensor(square)
            sticks = self._tensor(stickman)
            fg = self.segment(source)
            masked = source * fg + (-1) * (1 - fg) if self.mask_source else source
            embeds = nets["identity_embedder"](torch.cat([masked, sticks], 1))
            texture = nets["texture_generator"](embeds)
            target_embeds, source_embeds = (
                nets["keypoints_embedder"](torch.from_numpy(pose[None]).to(self.device))
                for pose in (target_pose, source_pose)
            )
            inference = nets["inference_generator"]
            inference.adapt(embeds)
            uvs, lf, logits = inference(target_embeds)
            source_uvs, source_lf, source_logits = inference(source_embeds)
            enhanced = nets["texture_enhancer"](
                texture, source_uvs, source_lf, torch.sigmoid(source_logits), source
            )
            image = lf + torch.nn.functional.grid_sample(enhanced, uvs, align_corners=False)
            segs = torch.sigmoid(logits)
        if not (torch.isfinite(image).all() and torch.isfinite(segs).all()):
            raise ForgeryError("fastreen: the generators gave non-finite pixels")
        return {
            "square": square,
            "box": box,
            "source_pose": source_pose,
            "target_pose": target_pose,
            "stickman": stickman,
            "foreground": fg,
            "texture": texture,
            "enhanced_texture": enhanced,
            "image": image,
            "segmentation": segs,
        }

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        out = self.generate(source_img, source_lm, target_lm)
        image = ((out["image"][0].clamp(-1, 1) + 1) / 2 * 255).permute(1, 2, 0).cpu().numpy()
        seg = out["segmentation"][0, 0].cpu().numpy()
        x0, y0, side = out["box"]
        scale = side / float(self.cfg.image_size)
        # output pixel u lies at (u + 0.5) * scale - 0.5 of the square (PIL's bicubic resize)
        mat = np.array([[scale, 0, x0 + 0.5 * scale - 0.5], [0, scale, y0 + 0.5 * scale - 0.5]])
        h, w = source_img.shape[:2]
        fake = cv2.warpAffine(image, mat, (w, h), borderValue=0.0)
        alpha = cv2.warpAffine(seg, mat, (w, h), borderValue=0.0)
        if not (alpha > 1.0 / 255).any():
            raise ForgeryError("fastreen: the generated head falls outside the crop")
        fake = np.clip(fake + 0.5, 0, 255).astype(np.uint8)
        result, mask = composite(fake, source_img, alpha)
        return ForgeryResult(result, mask)
