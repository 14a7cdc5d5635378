"""Per-fake quality measures: how good, how visible and how faithful each fake is.

The forgery quality card (docs/metrics.md, "Forgery quality") summarises these per dataset,
method and group (:mod:`fairforge.tables.forgery_quality`). For one fake, with its *source*
(the identity put in, or the face edited), its *target* and its *driver* (the face whose pose
and expression the fake should show: the target for identity replacement and reenactment,
the source itself for methods that need no target) and its *kept* image (the image the fake
was composited into: the target for identity replacement, the source otherwise):

- ``id_sim_source``, ``id_sim_target``: cosine similarity of the fake's face embedding to
  the source's and to the target's (an ``embed`` function given by the caller, for the
  workflow dlib's ResNet; only a deterministic sample of fakes, see :func:`identity_sample`);
- ``pose_distance`` (degrees) and ``expression_distance`` (inter-ocular units): yaw/pitch
  and the :data:`~fairforge.forgery.parsing.EXPRESSION` measures of the 68 landmarks
  detected again on the fake, against the driver's (landmarks detected the same way on the
  driver's crop); ``source_pose_distance`` and ``source_expression_distance`` are the
  source's, i.e. the gap a reenactment has to close;
- ``change_energy``: mean absolute difference between the fake and the kept image inside the
  manipulation mask (grey levels, mean over RGB channels); ``near_invisible`` when it is
  below :data:`NEAR_INVISIBLE` grey levels;
- ``boundary_gradient``: mean gradient magnitude of the fake on the mask boundary (a band of
  :data:`BOUNDARY_BAND` pixels either side) divided by the kept image's on the same band
  (1: the blend leaves no edge; above 1: a visible seam);
- ``redetected``: the face detector finds a face in the fake;
- ``skin_colour_shift``: CIE LAB distance between the mean colours of the fake and of the
  kept image over the kept face's skin (:func:`~fairforge.forgery.parsing.parse_parts` with
  the image: the face region less its parts and hair), in LAB units; an attribute edit that
  leaves skin tone alone scores near 0.

Measures of a set of fakes rather than of one (:data:`RATIO_MEASURES`, on the card):

- ``yaw_gap_closed``, ``pitch_gap_closed``: how far the fakes moved from the source's yaw
  (pitch) toward the driver's, as a share of the gap (:func:`gap_closed`: 1, all the way; 0,
  not at all), over the fakes whose face, source and driver were all found again;
- method separation (:func:`method_separation`): per two methods that composite into the
  same image from the same source, the mean absolute difference of their fakes inside the
  union of their masks, against the mean of their changes to the kept image.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pandas as pd

from ..faces import detect_faces, predict_landmarks
from ..images import read_image
from ..seeding import derive_seed
from .base import FORGERY_METHODS, NEAR_INVISIBLE, as_landmarks, change_energy, method_key
from .parsing import cie_lab, measure_expression, parse_parts
from .pose import face_pose

BOUNDARY_BAND = 2  # pixels either side of the mask edge
IDENTITY_PER_GROUP = 25  # fakes per method and group whose identity similarity is measured

# The measures the card summarises, in its order: name -> what it is, for captions and axes.
QUALITY_MEASURES = {
    "id_sim_source": "identity similarity to the source (cosine)",
    "id_sim_target": "identity similarity to the target (cosine)",
    "pose_distance": "yaw/pitch distance to the driver (degrees)",
    "expression_distance": "expression distance to the driver (IOD units)",
    "change_energy": "mean |fake - kept| inside the mask (grey levels)",
    "near_invisible": f"share of fakes changed < {NEAR_INVISIBLE:g} grey levels in the mask",
    "boundary_gradient": "gradient on the mask boundary, fake / kept",
    "redetected": "share of fakes whose face is detected again",
    "skin_colour_shift": "mean skin colour, fake vs kept (CIE LAB units)",
}
# Card measures that are a ratio of two sums over fakes: name -> (what it is, the per-fake
# columns (after, before, goal) of :func:`gap_terms`).
RATIO_MEASURES = {
    "yaw_gap_closed": (
        "share of the source-to-driver yaw gap closed",
        ("yaw", "source_yaw", "driver_yaw"),
    ),
    "pitch_gap_closed": (
        "share of the source-to-driver pitch gap closed",
        ("pitch", "source_pitch", "driver_pitch"),
    ),
}
# Every measure on the card, in its order: name -> what it is.
CARD_MEASURES = {**QUALITY_MEASURES, **{k: v[0] for k, v in RATIO_MEASURES.items()}}

# What a per-fake row holds besides the measures (identifiers, and the poses behind them).
FAKE_ID_COLUMNS = [
    "dataset",
    "sample_id",
    "method",
    "backend",
    "image_id",
    "target_image_id",
    "group",
    "subject_id",
]
POSE_COLUMNS = [
    "yaw",
    "pitch",
    "source_yaw",
    "source_pitch",
    "driver_yaw",
    "driver_pitch",
    "source_pose_distance",
    "source_expression_distance",
]
FAKE_QUALITY_COLUMNS = [*FAKE_ID_COLUMNS, *QUALITY_MEASURES, *POSE_COLUMNS, "identity_sampled"]

Embed = Callable[[Sequence[np.ndarray]], np.ndarray]


def kept_role(method: str, backend: str) -> str:
    """``"target"`` or ``"source"``: which image the method composites its fake into."""
    return FORGERY_METHODS.metadata(method_key(method, backend))["kept"]


def _gradient(img: np.ndarray) -> np.ndarray:
    # Float64 Sobel of integer pixels is exact and numpy's hypot is the same on every path;
    # OpenCV's float32 magnitude rounds differently with its thread stripes, so a resumed run
    # on other cores wrote other bytes.
    grey = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(np.float64)
    return np.hypot(cv2.Sobel(grey, cv2.CV_64F, 1, 0), cv2.Sobel(grey, cv2.CV_64F, 0, 1))


def boundary_band(mask: np.ndarray, width: int = BOUNDARY_BAND) -> np.ndarray:
    """Boolean band of ``width`` pixels either side of the mask's edge."""
    m = (np.asarray(mask) > 0).astype(np.uint8)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * width + 1, 2 * width + 1))
    return (cv2.dilate(m, kernel) > 0) & ~(cv2.erode(m, kernel) > 0)


def boundary_gradient(fake: np.ndarray, kept: np.ndarray, mask: np.ndarray) -> float:
    """Mean gradient magnitude of ``fake`` on the mask boundary over ``kept``'s there."""
    band = boundary_band(mask)
    if not band.any():
        return float("nan")
    return float(_gradient(fake)[band].mean() / max(_gradient(kept)[band].mean(), 1e-6))


def skin_colour_shift(fake: np.ndarray, kept: np.ndarray, kept_lm: np.ndarray) -> float:
    """CIE LAB distance between the mean colours of ``fake`` and ``kept`` over the kept
    face's skin (face region less parts and hair); NaN when no skin is parsed."""
    skin = parse_parts(kept_lm, kept.shape, kept)["skin"] > 0
    if not skin.any():
        return float("nan")
    diff = cie_lab(fake)[skin].astype(np.float64).mean(0) - cie_lab(kept)[skin].astype(
        np.float64
    ).mean(0)
    return float(np.linalg.norm(diff))


def gap_terms(
    after: np.ndarray, before: np.ndarray, goal: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per fake, the movement from ``before`` toward ``goal`` (signed: away is negative) and
    the gap ``|goal - before|``; both NaN where any of the three is."""
    after, before, goal = (np.asarray(x, np.float64) for x in (after, before, goal))
    gap = goal - before
    ok = np.isfinite(after) & np.isfinite(before) & np.isfinite(goal)
    moved = np.where(ok, (after - before) * np.sign(gap), np.nan)
    return moved, np.where(ok, np.abs(gap), np.nan)


def gap_closed(before: np.ndarray, after: np.ndarray, goal: np.ndarray) -> float:
    """Summed movement toward ``goal`` over the summed gap (1: all the way; NaN: no gap)."""
    moved, gap = gap_terms(after, before, goal)
    ok = np.isfinite(moved)
    total = gap[ok].sum()
    return float(moved[ok].sum() / total) if total > 0 else float("nan")


def face_geometry(img: np.ndarray, detector: str = "hog") -> dict[str, Any]:
    """Whether a face is detected in ``img`` and, if so, its yaw, pitch and expression."""
    found = detect_faces(img, detector, upsample=0)
    if not found:
        return {"found": False, "yaw": np.nan, "pitch": np.nan, "expression": None}
    lm = predict_landmarks(img, found[0])
    pose = face_pose(lm, img.shape[1])
    return {
        "found": True,
        "yaw": pose["yaw"],
        "pitch": pose["pitch"],
        "expression": measure_expression(lm),
    }


def _pose_gap(a: dict, b: dict) -> float:
    return float(np.hypot(a["yaw"] - b["yaw"], a["pitch"] - b["pitch"]))


def _expression_gap(a: dict, b: dict) -> float:
    if a["expression"] is None or b["expression"] is None:
        return float("nan")
    return float(np.linalg.norm(a["expression"] - b["expression"]))


def identity_sample(
    forgeries: pd.DataFrame, seed: int, per_group: int | None = IDENTITY_PER_GROUP
) -> set[str]:
    """The image ids whose fakes get identity measures: per group, the ``per_group`` ids
    first in the order of ``derive_seed(seed, "forgery_quality", image_id)`` (the same ids
    for every method); all of them when ``per_group`` is None."""
    made = forgeries["ok"].astype(bool) if "ok" in forgeries.columns else slice(None)
    ids = forgeries.loc[made, ["image_id", "group"]].astype(str)
    if per_group is None:
        return set(ids["image_id"])
    ids = ids.drop_duplicates("image_id").assign(
        key=lambda f: [derive_seed(seed, "forgery_quality", i) for i in f["image_id"]]
    )
    ids = ids.sort_values(["group", "key"], kind="stable")
    return set(ids.groupby("group", sort=True).head(int(per_group))["image_id"])


def measure_forgeries(
    forgeries: pd.DataFrame,
    faces: pd.DataFrame,
    results_dir: str | Path,
    dataset: str,
    seed: int,
    embed: Embed | None = None,
    identity_per_group: int | None = IDENTITY_PER_GROUP,
    detector: str = "hog",
    crops_dir: str | Path | None = None,
) -> pd.DataFrame:
    """One row of :data:`FAKE_QUALITY_COLUMNS` per ok fake of one method's manifest.

    ``faces`` gives ``crop_path`` (relative to ``crops_dir``, default ``results_dir``) and
    ``landmarks`` per image_id; fake and mask paths are relative to ``results_dir``. Without ``embed`` the
    identity measures are NaN. Failed fakes are not measured (their rate is the forgery
    success table's).
    """
    root = Path(results_dir)
    crops_root = Path(crops_dir) if crops_dir is not None else root
    by_id = faces.assign(image_id=faces["image_id"].astype(str)).set_index("image_id")
    crops = by_id["crop_path"]
    made = forgeries.loc[forgeries["ok"].astype(bool)].sort_values("sample_id", kind="stable")
    sampled = identity_sample(made, seed, identity_per_group) if embed is not None else set()

    @cache
    def real(image_id: str) -> tuple[np.ndarray, dict]:
        img = read_image(crops_root / str(crops[image_id]))
        return img, face_geometry(img, detector)

    @cache
    def real_embedding(image_id: str) -> np.ndarray:
        return np.asarray(embed([real(image_id)[0]]))[0]

    rows = []
    for rec in made.to_dict("records"):
        image_id, target_id = str(rec["image_id"]), str(rec["target_image_id"])
        source_img, source_geo = real(image_id)
        target_img, target_geo = real(target_id)
        fake = read_image(root / rec["path"])
        mask = cv2.cvtColor(read_image(root / rec["mask_path"]), cv2.COLOR_RGB2GRAY)
        kept_id = target_id if kept_role(rec["method"], rec["backend"]) == "target" else image_id
        kept = real(kept_id)[0]
        geo = face_geometry(fake, detector)
        energy = change_energy(fake, kept, mask)
        row = {c: rec.get(c) for c in FAKE_ID_COLUMNS}
        row.update(
            dataset=dataset,
            change_energy=energy,
            near_invisible=energy < NEAR_INVISIBLE,
            boundary_gradient=boundary_gradient(fake, kept, mask),
            redetected=bool(geo["found"]),
            skin_colour_shift=skin_colour_shift(
                fake, kept, as_landmarks(by_id.at[kept_id, "landmarks"])
            ),
            pose_distance=_pose_gap(geo, target_geo),
            expression_distance=_expression_gap(geo, target_geo),
            yaw=geo["yaw"],
            pitch=geo["pitch"],
            source_yaw=source_geo["yaw"],
            source_pitch=source_geo["pitch"],
            driver_yaw=target_geo["yaw"],
            driver_pitch=target_geo["pitch"],
            source_pose_distance=_pose_gap(source_geo, target_geo),
            source_expression_distance=_expression_gap(source_geo, target_geo),
            identity_sampled=image_id in sampled,
            id_sim_source=np.nan,
            id_sim_target=np.nan,
        )
        if image_id in sampled:
            e_fake = np.asarray(embed([fake]))[0]
            row["id_sim_source"] = float(e_fake @ real_embedding(image_id))
            row["id_sim_target"] = float(e_fake @ real_embedding(target_id))
        rows.append(row)
    out = pd.DataFrame(rows, columns=FAKE_QUALITY_COLUMNS)
    for col in ("near_invisible", "redetected", "identity_sampled"):
        out[col] = out[col].astype(bool)
    return out


SEPARATION_COLUMNS = [
    "dataset",
    "method",
    "other",
    "image_id",
    "kept_image_id",
    "group",
    "subject_id",
    "between",
    "own",
]


def method_separation(
    forgeries: dict[str, pd.DataFrame],
    faces: pd.DataFrame,
    results_dir: str | Path,
    dataset: str,
    crops_dir: str | Path | None = None,
) -> pd.DataFrame:
    """How different two methods' fakes of the same face are (:data:`SEPARATION_COLUMNS`).

    For every two methods of ``forgeries`` (method -> its manifest) that composite into the
    same kind of image (:func:`kept_role`), and every source image both made an ok fake of
    into the same kept image: ``between``, the mean over the union of their masks of the
    mean over RGB of |fake A - fake B| (grey levels), and ``own``, the mean of the two
    fakes' :func:`~fairforge.forgery.base.change_energy` against the kept image. One row per
    ordered pair of methods (both orders, the same numbers), sorted.
    """
    root = Path(results_dir)
    crops_root = Path(crops_dir) if crops_dir is not None else root
    crops = faces.assign(image_id=faces["image_id"].astype(str)).set_index("image_id")["crop_path"]
    index: dict[tuple[str, str, str], dict[str, dict]] = {}
    for method, frame in sorted(forgeries.items()):
        for rec in frame.loc[frame["ok"].astype(bool)].to_dict("records"):
            role = kept_role(rec["method"], rec["backend"])
            image_id = str(rec["image_id"])
            kept_id = str(rec["target_image_id"]) if role == "target" else image_id
            index.setdefault((role, image_id, kept_id), {})[method] = rec

    @cache
    def kept_image(image_id: str) -> np.ndarray:
        return read_image(crops_root / str(crops[image_id]))

    rows = []
    for (_, image_id, kept_id), recs in sorted(index.items()):
        if len(recs) < 2:
            continue
        kept = kept_image(kept_id)
        loaded = {}
        for method, rec in recs.items():
            fake = read_image(root / rec["path"])
            mask = cv2.cvtColor(read_image(root / rec["mask_path"]), cv2.COLOR_RGB2GRAY) > 0
            loaded[method] = (fake, mask, change_energy(fake, kept, mask))
        for a in sorted(loaded):
            for b in sorted(loaded):
                if a == b:
                    continue
                (fa, ma, ea), (fb, mb, eb) = loaded[a], loaded[b]
                union = ma | mb
                diff = np.abs(fa.astype(np.int16) - fb.astype(np.int16)).mean(axis=2)
                rec = recs[a]
                rows.append(
                    {
                        "dataset": dataset,
                        "method": a,
                        "other": b,
                        "image_id": image_id,
                        "kept_image_id": kept_id,
                        "group": rec.get("group"),
                        "subject_id": rec.get("subject_id"),
                        "between": float(diff[union].mean()) if union.any() else float("nan"),
                        "own": 0.5 * (ea + eb),
                    }
                )
    out = pd.DataFrame(rows, columns=SEPARATION_COLUMNS)
    return out.sort_values(["method", "other", "image_id", "kept_image_id"], ignore_index=True)
