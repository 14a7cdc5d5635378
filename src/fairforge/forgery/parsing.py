"""Face parts and expression measures from the 68 dlib landmarks (and hair from the image).

Indices follow the iBUG 300-W / dlib convention: jaw 0-16, brows 17-21 and 22-26, nose
27-35, eyes 36-41 and 42-47, outer lips 48-59, inner lips 60-67. "Left" and "right" are
image sides (the subject's right eye is at image left).

The landmark parts stand in for the face classes of a face-parsing model such as the one
CelebAMask-HQ (MaskGAN's data set) annotates: skin, nose, eyes, brows, upper and lower lip,
mouth. Its ``hair`` class lies outside the landmarks, so :func:`hair_region` finds it from
the landmarks' geometry and the image's colour (:func:`parse_parts` with an image).
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import dilate, disk, erode, eye_centers, interocular, polygon_mask

JAW = np.arange(0, 17)
BROW_L, BROW_R = np.arange(17, 22), np.arange(22, 27)
NOSE = np.arange(27, 36)
EYE_L, EYE_R = np.arange(36, 42), np.arange(42, 48)
OUTER_LIP, INNER_LIP = np.arange(48, 60), np.arange(60, 68)
UPPER_LIP = np.array([48, 49, 50, 51, 52, 53, 54, 64, 63, 62, 61, 60])
LOWER_LIP = np.array([54, 55, 56, 57, 58, 59, 48, 60, 67, 66, 65, 64])

# How far each point follows the jaw when the mouth opens (lower lip fully, corners and the
# chin partly, tapering along the jaw line).
LOWER_MOUTH_WEIGHTS = {
    65: 1.0,
    66: 1.0,
    67: 1.0,
    55: 0.9,
    56: 1.0,
    57: 1.0,
    58: 1.0,
    59: 0.9,
    54: 0.4,
    48: 0.4,
    60: 0.4,
    64: 0.4,
    8: 1.0,
    7: 0.85,
    9: 0.85,
    6: 0.6,
    10: 0.6,
    5: 0.35,
    11: 0.35,
    4: 0.1,
    12: 0.1,
}

# The parts a parser yields from the landmarks, each as one or more connected components.
PARTS = ("skin", "nose", "eyes", "brows", "upper_lip", "lower_lip", "mouth")
HAIR = "hair"
# With the image: the landmark parts and hair (skin then excludes the hair on the forehead).
IMAGE_PARTS = (*PARTS, HAIR)

# CelebAMask-HQ's 19 classes in the order of MaskGAN's label maps: label k is
# CELEBAMASK_LABELS[k] (CelebAMask-HQ's face_parsing/Data_preprocessing/g_mask.py, "list2",
# whose later classes are painted over earlier ones; MaskGAN_demo/demo.py's drawing modes
# 0-18). "l_" and "r_" are the subject's left and right (image right and left), as the
# demo's sample maps show.
CELEBAMASK_LABELS = (
    "background",
    "skin",
    "nose",
    "eye_g",
    "l_eye",
    "r_eye",
    "l_brow",
    "r_brow",
    "l_ear",
    "r_ear",
    "mouth",
    "u_lip",
    "l_lip",
    "hair",
    "hat",
    "ear_r",
    "neck_l",
    "neck",
    "cloth",
)
# The CelebAMask-HQ classes of each landmark part's components (part_components' order:
# image left first, the subject's right).
LANDMARK_CLASSES = {
    "nose": ("nose",),
    "eyes": ("r_eye", "l_eye"),
    "brows": ("r_brow", "l_brow"),
    "mouth": ("mouth",),
    "upper_lip": ("u_lip",),
    "lower_lip": ("l_lip",),
}

# Hair finding, lengths in inter-ocular units (IOD).
HAIRLINE_SEARCH = (0.15, 1.1)  # a hairline is looked for this far above the brows
HAIR_SEED_DEPTH = 0.25  # hair colour is sampled this far past the hairline
HAIR_BELOW_CHIN = 0.3  # hair is followed down to this far below the chin
HAIR_MIN_AREA = 0.3  # IOD^2: less than this is no hair


def face_frame(lm: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Unit axes of the face (x: from image-left eye to image-right eye; y: down the face)
    and the inter-ocular distance."""
    left, right = eye_centers(lm)
    iod = interocular(lm)
    ax = (right - left) / max(iod, 1e-6)
    ay = np.array([-ax[1], ax[0]])
    return ax.astype(np.float64), ay.astype(np.float64), iod


def _band(points: np.ndarray, half_width: float) -> np.ndarray:
    """Polygon of a thick polyline: the points offset both ways along their normals."""
    pts = np.asarray(points, np.float64)
    tangent = np.gradient(pts, axis=0)
    norm = np.linalg.norm(tangent, axis=1, keepdims=True)
    normal = np.stack([-tangent[:, 1], tangent[:, 0]], 1) / np.maximum(norm, 1e-6)
    return np.concatenate([pts + half_width * normal, (pts - half_width * normal)[::-1]], 0)


def forehead_points(lm: np.ndarray, lift: float = 0.5) -> np.ndarray:
    """The brow line lifted ``lift`` inter-ocular distances up the face."""
    _, ay, iod = face_frame(lm)
    return lm[17:27].astype(np.float64) - lift * iod * ay


def part_components(lm: np.ndarray) -> dict[str, list[np.ndarray]]:
    """Polygons (pixel coordinates) for each part, one per connected component."""
    lm = np.asarray(lm, np.float64)
    ax, ay, iod = face_frame(lm)
    bridge = lm[27:31]
    nose = np.concatenate([bridge + 0.1 * iod * ax, lm[31:36][::-1], bridge[::-1] - 0.1 * iod * ax])
    return {
        "nose": [nose],
        "eyes": [lm[EYE_L], lm[EYE_R]],
        "brows": [_band(lm[BROW_L], 0.06 * iod), _band(lm[BROW_R], 0.06 * iod)],
        "upper_lip": [lm[UPPER_LIP]],
        "lower_lip": [lm[LOWER_LIP]],
        "mouth": [lm[INNER_LIP]],
    }


def face_region(lm: np.ndarray, shape: tuple[int, ...], lift: float = 0.5) -> np.ndarray:
    """0/255 mask of jaw line and forehead (brows lifted by ``lift`` IOD)."""
    lm = np.asarray(lm, np.float64)
    poly = np.concatenate([lm[JAW], forehead_points(lm, lift)[::-1]], 0)
    return polygon_mask(poly, shape, convex=False)


def parse_parts(
    lm: np.ndarray, shape: tuple[int, ...], img: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """0/255 masks for :data:`PARTS`; ``skin`` is the face region minus every other part.

    With ``img`` (the crop the landmarks belong to): masks for :data:`IMAGE_PARTS`, ``hair``
    from :func:`hair_region`, and ``skin`` without the hair that covers the forehead.
    """
    masks: dict[str, np.ndarray] = {}
    for name, polys in part_components(lm).items():
        m = np.zeros(shape[:2], np.uint8)
        for poly in polys:
            m |= polygon_mask(poly, shape, convex=False)
        masks[name] = m
    skin = face_region(lm, shape)
    for m in masks.values():
        skin[m > 0] = 0
    masks["skin"] = skin
    if img is None:
        return {name: masks[name] for name in PARTS}
    masks[HAIR] = hair_region(img, lm)
    skin[masks[HAIR] > 0] = 0
    return {name: masks[name] for name in IMAGE_PARTS}


def label_map(lm: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """uint8 HxW map of :data:`CELEBAMASK_LABELS` from the landmarks: background, skin (the
    face region), nose, eyes, brows, mouth and lips, painted in the labels' order as
    CelebAMask-HQ paints its annotations. The classes the landmarks do not reach (glasses,
    ears, hair, neck, ...) are absent: a face-parsing network gives them."""
    labels = np.zeros(shape[:2], np.uint8)
    labels[face_region(lm, shape) > 0] = CELEBAMASK_LABELS.index("skin")
    painted = []
    for part, polys in part_components(lm).items():
        painted += zip(LANDMARK_CLASSES[part], polys, strict=True)
    for name, poly in sorted(painted, key=lambda item: CELEBAMASK_LABELS.index(item[0])):
        labels[polygon_mask(poly, shape, convex=False) > 0] = CELEBAMASK_LABELS.index(name)
    return labels


def down_the_face(lm: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, float]:
    """Per pixel, the distance (pixels) down the face's vertical axis from the midpoint of
    the eyes, and the chin's."""
    lm = np.asarray(lm, np.float64)
    _, ay, _ = face_frame(lm)
    left, right = eye_centers(lm)
    centre = (left + right) / 2
    ys, xs = np.mgrid[0 : shape[0], 0 : shape[1]]
    v = (xs - centre[0]) * ay[0] + (ys - centre[1]) * ay[1]
    return v, float((lm[8] - centre) @ ay)


def hair_fade(lm: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """float32 weight: 1 down to the chin, falling to 0 at :data:`HAIR_BELOW_CHIN` IOD below
    it, where :func:`hair_region` stops following the hair, so an edit of long hair fades
    out instead of ending at a line."""
    v, chin = down_the_face(lm, shape)
    band = HAIR_BELOW_CHIN * interocular(np.asarray(lm, np.float64))
    return np.clip((chin + band - v) / max(band, 1e-6), 0, 1).astype(np.float32)


def cie_lab(img: np.ndarray) -> np.ndarray:
    """CIE L*a*b* (L in 0..100) of a uint8 RGB image, float32."""
    return cv2.cvtColor(img.astype(np.float32) / 255.0, cv2.COLOR_RGB2LAB)


def hair_region(img: np.ndarray, lm: np.ndarray) -> np.ndarray:
    """0/255 mask of the hair around the face: CelebAMask-HQ's ``hair`` class, found from
    the landmarks and the image's colour without a parsing network.

    1. Colour is read from the image median-filtered over an eighth of the inter-ocular
       distance (IOD), which smooths hair strands into their region's colour.
    2. Skin colours: the median over the forehead between the brows (a disk 0.12 IOD
       across, as high above the inner brow ends) and over the cheeks (skin part below the
       eyes).
    3. Hairline: along the face's vertical axis above each brow point, the first pixel
       between :data:`HAIRLINE_SEARCH` IOD above the brows that is far from the forehead's
       colour (beyond the forehead's own spread; and stays so for a few pixels). When
       fewer than half the brow points find one (a bald head, a crop that ends at the
       forehead), there is no hair.
    4. The hair colour is the median of :data:`HAIR_SEED_DEPTH` IOD past the hairlines.
    5. Hair is every pixel of the head's surroundings (the face region with the brows
       lifted 1.3 IOD, grown by 0.8 IOD,
       down to :data:`HAIR_BELOW_CHIN` IOD below the chin) closer to the hair colour than a
       threshold set from the seed's own spread, and closer to it than to the skin's,
       outside the face region below the brows (inside it only above the brows: a fringe),
       never on the eyes, brows or neck (below the jaw), in a component that holds seed
       pixels; holes the size of a strand are closed. Less than :data:`HAIR_MIN_AREA` IOD² is no hair.

    Simplifications: a colour model, not a learned parser. Hair the colour of the skin
    (or a scalp seen through thin hair) is missed, a background of the hair's colour next
    to the hair is taken with it (within the head's surroundings), and hair hanging past
    the chin is not followed.
    """
    lm = np.asarray(lm, np.float64)
    h, w = img.shape[:2]
    empty = np.zeros((h, w), np.uint8)
    ax, ay, iod = face_frame(lm)
    if iod < 4:
        return empty
    k = max(int(round(iod / 8)) | 1, 3)
    lab = cie_lab(cv2.medianBlur(np.ascontiguousarray(img), min(k, 255)))
    v, chin = down_the_face(lm, img.shape)
    ys, xs = np.mgrid[0:h, 0:w]

    parts = parse_parts(lm, img.shape)
    cheeks = (erode(parts["skin"], max(int(iod / 16), 1)) > 0) & (v > 0.1 * iod)
    lo, hi = HAIRLINE_SEARCH
    steps = np.arange(lo * iod, hi * iod, 0.5)
    paths = []
    for p in lm[17:27]:
        path = np.round(p[None] - steps[:, None] * ay[None]).astype(int)
        inside = (path[:, 0] >= 0) & (path[:, 0] < w) & (path[:, 1] >= 0) & (path[:, 1] < h)
        paths.append(path[: np.argmin(inside)] if not inside.all() else path)
    glabella = (lm[21] + lm[22]) / 2 - 0.12 * iod * ay
    forehead = np.hypot(xs - glabella[0], ys - glabella[1]) < max(0.12 * iod, 1.5)
    forehead &= parts["brows"] == 0
    if cheeks.sum() < 16 or forehead.sum() < 4:
        return empty
    # Skin: the forehead just above the brows, which the hairline borders, and the cheeks
    # (for the hair's extent: shading differs between them).
    refs = [np.median(lab[forehead], axis=0), np.median(lab[cheeks], axis=0)]
    to_forehead = np.linalg.norm(lab - refs[0], axis=2)
    skin_dist = np.minimum(to_forehead, np.linalg.norm(lab - refs[1], axis=2))
    base = to_forehead[forehead]
    spread = 1.4826 * np.median(np.abs(base - np.median(base)))
    far = to_forehead > max(12.0, np.median(base) + 4.0 * spread)

    # Hairlines above the brows, and the hair colour past them.
    run = max(int(round(0.06 * iod)), 2)
    depth = max(int(round(HAIR_SEED_DEPTH * iod / 0.5)), run)
    seeds: list[tuple[int, int]] = []
    found = 0
    for path in paths:
        if len(path) < 2 * run:
            continue
        hit = far[path[:, 1], path[:, 0]]
        start = next((i for i in range(len(hit) - run) if hit[i : i + run].all()), None)
        if start is None:
            continue
        found += 1
        seeds += [(int(y), int(x)) for x, y in path[start : start + depth] if far[y, x]]
    if found < 5 or not seeds:
        return empty
    sy, sx = np.array(seeds).T
    hair = np.median(lab[sy, sx], axis=0)
    hair_dist = np.linalg.norm(lab - hair, axis=2)
    seed_dist = hair_dist[sy, sx]
    limit = max(12.0, np.median(seed_dist) + 3.0 * 1.4826 * np.median(seed_dist))
    close = (hair_dist < limit) & (hair_dist < skin_dist)

    # Where hair may be: the head's surroundings, off the face below the brows, off the
    # eyes and brows.
    grow = max(int(round(0.8 * iod)), 1)
    zone = dilate(face_region(lm, img.shape, lift=1.3), grow) > 0
    zone &= v < chin + HAIR_BELOW_CHIN * iod
    left, right = eye_centers(lm)
    brow_level = min((lm[17:27] - (left + right) / 2) @ ay)
    face = face_region(lm, img.shape, lift=0.5) > 0
    zone &= ~(face & (v > brow_level - 0.15 * iod))
    features = dilate(parts["eyes"] | parts["brows"], max(int(round(0.12 * iod)), 1)) > 0
    neck = polygon_mask(np.concatenate([lm[3:14], lm[13:2:-1] + 1.5 * iod * ay]), img.shape)
    zone &= ~features & (neck == 0)
    cand = (close & zone).astype(np.uint8)
    _, labels = cv2.connectedComponents(cand, connectivity=8)
    keep = np.unique(labels[sy, sx])
    keep = keep[keep > 0]
    if not len(keep):
        return empty
    mask = np.isin(labels, keep).astype(np.uint8) * 255
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, disk(max(int(round(0.06 * iod)), 1)))
    mask[~zone] = 0
    if (mask > 0).sum() < HAIR_MIN_AREA * iod**2:
        return empty
    return mask


EXPRESSION = ("mouth_open", "mouth_width", "eye_open_l", "eye_open_r", "brow_l", "brow_r")


def measure_expression(lm: np.ndarray) -> np.ndarray:
    """Expression measures in inter-ocular units, in the face's own frame.

    mouth opening (inner-lip gap), mouth width (corner to corner), each eye's lid opening,
    each brow's height above its eye centre.
    """
    lm = np.asarray(lm, np.float64)
    ax, ay, iod = face_frame(lm)
    left, right = eye_centers(lm)
    gap = ((lm[[67, 66, 65]] - lm[[61, 62, 63]]) @ ay).mean()
    width = (lm[54] - lm[48]) @ ax
    eye_l = ((lm[[41, 40]] - lm[[37, 38]]) @ ay).mean()
    eye_r = ((lm[[47, 46]] - lm[[43, 44]]) @ ay).mean()
    brow_l = ((left - lm[BROW_L]) @ ay).mean()
    brow_r = ((right - lm[BROW_R]) @ ay).mean()
    return np.array([gap, width, eye_l, eye_r, brow_l, brow_r]) / max(iod, 1e-6)


def occluders(img: np.ndarray, lm: np.ndarray, min_area: float = 0.03) -> np.ndarray:
    """0/255 mask of what covers the face's skin: glasses frames, hair strands, hands.

    A landmark parser sees no occluders, so they are found by colour: skin pixels (the face
    region minus the parts that may legitimately differ from the skin around them: eyes,
    brows, lips, mouth, nostrils) whose LAB colour is far from the local skin colour (a
    median filter a quarter of the inter-ocular distance wide, which follows the shading),
    kept where they form a component of at least ``min_area`` IOD^2 (a frame or a strand;
    a mole or skin grain is smaller), then grown a little to cover their antialiased edge.
    A stand-in for a learned face-parsing model's occlusion classes.
    """
    lm = np.asarray(lm, np.float64)
    iod = interocular(lm)
    parts = parse_parts(lm, img.shape)
    region = face_region(lm, img.shape, lift=0.35) > 0
    features = polygon_mask(lm[31:36], img.shape) | polygon_mask(lm[[31, 33, 35, 30]], img.shape)
    for name in ("eyes", "brows", "upper_lip", "lower_lip", "mouth"):
        features |= parts[name]
    grow = max(int(round(0.05 * iod)), 1)
    features = cv2.dilate(features, np.ones((3, 3), np.uint8), iterations=grow)
    # The face outline is an edge, not an occluder: keep off it.
    region = cv2.erode(region.astype(np.uint8), np.ones((3, 3), np.uint8), iterations=2 * grow)
    skin = (region > 0) & (features == 0)
    if skin.sum() < 32:
        return np.zeros(img.shape[:2], np.uint8)
    k = max(int(0.25 * iod) | 1, 3)
    local = cv2.medianBlur(img, min(k, 255))
    lab = cv2.cvtColor(img, cv2.COLOR_RGB2LAB).astype(np.float32)
    dist = np.linalg.norm(lab - cv2.cvtColor(local, cv2.COLOR_RGB2LAB).astype(np.float32), axis=2)
    spread = 1.4826 * np.median(dist[skin]) + 1e-3
    strong = skin & (dist > max(5.0 * spread, 12.0))
    # Hysteresis: a component of weaker outliers counts when it holds strong ones (a frame
    # fades where it crosses shading).
    weak = (skin & (dist > max(3.5 * spread, 9.0))).astype(np.uint8)
    _, labels, stats, _ = cv2.connectedComponentsWithStats(weak, connectivity=8)
    seeded = np.bincount(labels[strong], minlength=len(stats)) > 0
    big = np.flatnonzero((stats[:, cv2.CC_STAT_AREA] >= min_area * iod**2) & seeded)
    out = np.isin(labels, big[big > 0]).astype(np.uint8) * 255
    return cv2.dilate(out, np.ones((3, 3), np.uint8), iterations=grow)
