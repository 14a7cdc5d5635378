"""Real photographs cut the way released face datasets cut theirs, for the tests of the crops
that the faces stage writes and the forgery methods read.

The real faces are those that ship in the environment: the six of insightface's group
photograph (``t1.jpg``), its ``Tom_Hanks_54745.png`` (already a tight 112-px crop),
matplotlib's Grace Hopper and scikit-image's astronaut (Eileen Collins). The cuts:

- :func:`utkface_chip`: UTKFace's "aligned & cropped" faces are dlib face chips - the files
  are named ``*.jpg.chip.jpg`` and are 200 x 200, the defaults of dlib's
  ``get_face_chip_details`` (size 200, padding 0.2 around dlib's mean face of the 68
  points): upright, the face filling the chip, black where the chip reaches past the photo;
- :func:`rfw_image`: RFW's images are 400 x 400 (FairFD §3.3) with the face centred and
  little around it: here the face box is half the side, so the faces stage's default crop
  (margin 0.25) reaches past the image;
- :func:`ffpp_frame`: FaceForensics++'s frames are YouTube video at 480p or 720p; a
  presenter's face a third of the frame high with its brows near the top, so the default
  crop reaches past the frame's top.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import dlib
import numpy as np
import skimage.data
from matplotlib import cbook

from fairforge.faces import detect_faces, predict_landmarks
from fairforge.faces.detect import Detection
from fairforge.images import load_image

FRAME_WIDTHS = {480: 854, 720: 1280}  # 16:9 video lines -> columns


@dataclass(frozen=True)
class RealFace:
    name: str
    photo: np.ndarray
    box: Detection  # dlib HOG's box in the photo
    landmarks: np.ndarray  # (68, 2) photo pixels


def real_photos() -> dict[str, np.ndarray]:
    import insightface

    images = Path(insightface.__file__).parent / "data" / "images"
    return {
        "t1": load_image(images / "t1.jpg"),
        "hanks": load_image(images / "Tom_Hanks_54745.png"),
        "hopper": load_image(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)),
        "astronaut": skimage.data.astronaut(),
    }


def real_faces(photos: tuple[str, ...] | None = None) -> list[RealFace]:
    """Every face dlib's HOG finds in the photographs (all, or those named in ``photos``;
    upsampled once: t1's six are 90-130 px wide), with its 68 landmarks: nine faces; of the
    astronaut's two boxes the largest (the other is the patch on her suit)."""
    faces = []
    for name, photo in real_photos().items():
        if photos is not None and name not in photos:
            continue
        found = detect_faces(photo, "hog", upsample=1)
        for k, box in enumerate(found[:1] if name == "astronaut" else found):
            faces.append(RealFace(f"{name}{k}", photo, box, predict_landmarks(photo, box)))
    return faces


def utkface_chip(face: RealFace) -> tuple[np.ndarray, tuple[float, float]]:
    """UTKFace's cut: dlib's face chip at its defaults (200 px, padding 0.2). Returns the chip
    and where the face's centre lies in it."""
    b = face.box
    rect = dlib.rectangle(b.x0, b.y0, b.x1 - 1, b.y1 - 1)
    points = dlib.points([dlib.point(int(round(x)), int(round(y))) for x, y in face.landmarks])
    chip = dlib.get_face_chip(face.photo, dlib.full_object_detection(rect, points), 200, 0.2)
    return np.ascontiguousarray(chip), (100.0, 100.0)


def place(photo: np.ndarray, scale: float, x0: float, y0: float, size) -> np.ndarray:
    """``photo`` scaled by ``scale`` and shifted by (x0, y0) into an image of ``size``
    (width, height); past the photo its edge pixels are repeated."""
    matrix = np.array([[scale, 0.0, x0], [0.0, scale, y0]])
    flags = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    return cv2.warpAffine(photo, matrix, size, flags=flags, borderMode=cv2.BORDER_REPLICATE)


def rfw_image(face: RealFace, box_share: float = 0.5, size: int = 400):
    """RFW's cut: a ``size`` square centred on the face, the face box ``box_share`` of its
    side. Returns the image and the face's centre in it."""
    b = face.box
    scale = box_share * size / (b.x1 - b.x0)
    cx, cy = face.landmarks.mean(0)
    image = place(face.photo, scale, size / 2 - scale * cx, size / 2 - scale * cy, (size,) * 2)
    return image, (size / 2, size / 2)


def ffpp_frame(face: RealFace, height: int = 480, face_height: float = 1 / 3, top: float = 0.1):
    """A FaceForensics++ frame of ``height`` lines (480 or 720, 16:9): the face box
    ``face_height`` of the frame high, centred across, its top ``top`` of the height below
    the frame's top. Only the face's neighbourhood (its box grown by half on every side)
    comes from the photo, so a group photograph gives one face per frame; past it the edge
    repeats. Returns the frame and the face's centre in it."""
    b = face.box
    side = b.x1 - b.x0
    ox, oy = max(0, b.x0 - side // 2), max(0, b.y0 - side // 2)
    portrait = np.ascontiguousarray(face.photo[oy : b.y1 + side // 2, ox : b.x1 + side // 2])
    width = FRAME_WIDTHS[height]
    scale = face_height * height / side
    x0 = width / 2 - scale * ((b.x0 + b.x1) / 2 - ox)
    y0 = top * height - scale * (b.y0 - oy)
    frame = place(portrait, scale, x0, y0, (width, height))
    return frame, (width / 2, top * height + face_height * height / 2)
