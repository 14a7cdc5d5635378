"""MaskGAN with the authors' released generator (``backend: official``), driven as FairFD §3.4
automates it.

Release: MaskGAN (Lee et al., CVPR 2020), switchablenorms/CelebAMask-HQ, folder
``MaskGAN_demo``. Its README links the demo's checkpoint (Google Drive); the demo loads the
generator from ``checkpoints/label2face_512p/latest_net_G.pth``, a state dict
(``generator_path``; network: :mod:`fairforge.forgery.nets.maskgan`). The parsing map comes
from the BiSeNet face parser trained on CelebAMask-HQ's labels,
zllrunning/face-parsing.PyTorch's ``79999_iter.pth`` (``parser_path``; network and pre-processing:
:mod:`fairforge.forgery.nets.bisenet`; listed among the projects using CelebAMask-HQ in the
MaskGAN repository's README). Both files are state dicts, read with ``weights_only=True``;
no conversion step.

Per face, as the demo's ``edit`` does after a user has painted:

1. the crop is parsed (BiSeNet at 512 x 512; its classes converted to MaskGAN's label order,
   :data:`~fairforge.forgery.parsing.CELEBAMASK_LABELS`) and the map brought to the demo's
   ``load_size`` (512) by nearest neighbour, as the demo scales a map;
2. the map is edited by :func:`~fairforge.forgery.maskgan.fairfd_edit`, FairFD's automation of
   the demo's painting (the same edit, options and random draws as the classical backend);
3. the generator renders the edited map (``label``) in the style of the crop (``image_ref``,
   scaled to ``load_size`` by PIL's bicubic filter and normalised to [-1, 1], the demo's
   ``scale_width`` transform) whose own map is the parsed one (``label_ref``);
4. the output becomes uint8 as the demo converts it (``(x + 1) * 127.5``, truncated) and is
   brought back to the crop's size (OpenCV's area filter when shrinking, bicubic when
   growing; the demo shows its 512 x 512 output as is).

``paste`` says what the fake is: ``image`` (default), the generator's whole output, as the
demo shows it (FairFD edited with the demo's program; every pixel is re-synthesised, so the
mask is the whole crop); ``edited``, the output only over the edited parts' region
(:func:`~fairforge.forgery.maskgan.edited_region`, softened by ``0.04 IOD`` outwards), the
rest of the crop the source's, bit for bit.

Differences from the authors' setting: the demo takes CelebA-HQ's 1024 x 1024 images aligned
by CelebA-HQ's procedure; here the input is fairforge's aligned crop (five-point similarity
alignment, ``faces.margin``), whose framing of the face is close to CelebA-HQ's but not
the same. The labels enter the generator as exact one-hot maps, as its training data
loader encodes them (``aligned_dataset.py``: the map times 255.0); the demo's own scaling
(``Normalize`` by 1/255 in float32) truncates r_brow, hair, hat and earrings to the class
before each (tests/helpers/maskgan_reference.py shows it), which is taken for a slip of the demo, not
the network's encoding. ``ngf``, ``n_downsample_global``, ``n_blocks_global`` and
``load_size`` are the demo's options with its defaults, for a checkpoint trained with other
ones.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from .base import FORGERY_METHODS, ForgeryMethod, ForgeryResult, composite, feather, interocular
from .maskgan import (
    FACE_PARSER,
    FAIRFD_PARTS,
    RADIUS,
    check_parts,
    edited_region,
    fairfd_edit,
    release_text,
)
from .releases import ReleaseFile

GENERATOR = ReleaseFile(
    "generator_path",
    "latest_net_G.pth",
    "https://github.com/switchablenorms/CelebAMask-HQ (MaskGAN_demo/README.md: 'Download the "
    "checkpoint file', https://drive.google.com/file/d/1AjhjO4tmIdTESQvFVX8Eaq06FkVEmxgo; "
    "the demo reads checkpoints/label2face_512p/latest_net_G.pth)",
    "MaskGAN's generator (the demo's label2face_512p checkpoint)",
)
PASTE = ("image", "edited")


@FORGERY_METHODS.register("maskgan/official")
class MaskGANOfficial(ForgeryMethod):
    kept = "source"
    needs_target = False
    random = True
    release_files = (GENERATOR, FACE_PARSER)
    defaults = {
        "generator_path": None,  # latest_net_G.pth
        "parser_path": None,  # 79999_iter.pth
        "device": "cpu",  # torch device of both networks ("cuda")
        "threads": 1,  # torch threads on the CPU (a job's share of the cores)
        "parts": FAIRFD_PARTS,  # candidate parts (FairFD §3.4)
        "radius": RADIUS,  # dilate/erode radius range, inter-ocular distances
        "paste": "image",  # "image": the whole output; "edited": over the edited parts only
        # the demo's options
        "load_size": 512,
        "ngf": 64,
        "n_downsample_global": 4,
        "n_blocks_global": 4,
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        check_parts(self.options["parts"], self.name)
        if self.options["paste"] not in PASTE:
            raise ValueError(f"maskgan (official): paste must be one of {PASTE}")
        paths = self.check_options(self.options)
        import torch

        from .nets import bisenet
        from .nets import maskgan as nets

        self.device = torch.device(self.options["device"])
        if self.device.type == "cpu" and self.options["threads"]:
            torch.set_num_threads(int(self.options["threads"]))
        self.parser = bisenet.FaceParser(
            paths["parser_path"],
            release_text(self, FACE_PARSER, paths["parser_path"]),
            self.options["device"],
        )
        sizes = {k: self.options[k] for k in ("ngf", "n_downsample_global", "n_blocks_global")}
        what = release_text(self, GENERATOR, paths["generator_path"])
        self.generator = nets.load_generator(
            paths["generator_path"], what, self.options["device"], **sizes
        )
        self.one_hot = nets.one_hot

    def image_ref(self, img: np.ndarray) -> np.ndarray:
        """The demo's image input: scaled to ``load_size`` wide (PIL bicubic), in [-1, 1]."""
        from PIL import Image

        h, w = img.shape[:2]
        size = self.options["load_size"]
        pil = Image.fromarray(img)
        if w != size:
            pil = pil.resize((size, int(size * h / w)), Image.BICUBIC)
        return (np.asarray(pil, np.float32) / 255.0 - 0.5) / 0.5

    def render(self, edited: np.ndarray, labels: np.ndarray, ref: np.ndarray) -> np.ndarray:
        """The generator's uint8 image of ``edited`` in the style of ``ref`` (parsed as
        ``labels``)."""
        import torch

        with torch.inference_mode():
            label = self.one_hot(torch.from_numpy(edited)[None]).to(self.device)
            label_ref = self.one_hot(torch.from_numpy(labels)[None]).to(self.device)
            image = torch.from_numpy(ref).permute(2, 0, 1)[None].to(self.device)
            out = self.generator(label, label_ref, image)[0].permute(1, 2, 0).cpu().numpy()
        return ((out + 1) * 127.5).astype(np.uint8)

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        h, w = source_img.shape[:2]
        ref = self.image_ref(source_img)
        size = ref.shape[1], ref.shape[0]
        labels = self.parser(source_img, size)
        iod = interocular(source_lm) * ref.shape[1] / w
        edited, edits = fairfd_edit(labels, iod, rng, self.options["parts"], self.options["radius"])
        fake = self.render(edited, labels, ref)
        shrink = fake.shape[1] > w
        fake = cv2.resize(fake, (w, h), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_CUBIC)
        if self.options["paste"] == "image":
            alpha = np.ones((h, w), np.float32)
        else:
            region = edited_region(labels, edited, edits, iod).astype(np.uint8) * 255
            region = cv2.resize(region, (w, h), interpolation=cv2.INTER_NEAREST)
            alpha = feather(region, max(int(round(0.04 * interocular(source_lm))), 1), inside=False)
        image, mask = composite(fake, source_img, alpha)
        return ForgeryResult(image, mask, {"parts": sorted(edits), "edits": edits})
