"""The forgery-method interface, its registry, and the image operations the methods share.

A method is a small object built by :func:`create_method` from a name, a backend and options.
Calling it with a source and a target face (aligned crops of the same size, 68 landmarks in
crop coordinates) and a seeded generator returns a :class:`ForgeryResult`, or raises
:class:`ForgeryError` whose text is the manifest's ``reason``.

Which face is kept differs by method family (the ``kept`` attribute):
- ``"target"``: identity replacement (faceswap, simswap) puts the source identity into the
  target image, so the target's background, pose and lighting stay;
- ``"source"``: reenactment drives the source face with the target's expression, attribute
  editing and self-blending work on the source alone.

The returned mask is the authority on which pixels changed: every method composites through a
weight whose support is the mask, so pixels outside it are the kept image's, bit for bit.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import cv2
import numpy as np

from fairforge.faces.landmarks import parts_of
from fairforge.registry import Registry

from .releases import ReleaseFile, check_release_files

N_LANDMARKS = 68
# Grey levels: a fake whose mean change inside its mask is below this is near-invisible
# (docs/metrics.md, "Forgery quality"); methods record a failure instead of such a fake.
NEAR_INVISIBLE = 2.0


class ForgeryError(RuntimeError):
    """A face that a method cannot forge; ``str(err)`` is the manifest's ``reason``."""


@dataclass
class ForgeryResult:
    image: np.ndarray  # uint8 RGB, HxWx3, the size of the kept crop
    mask: np.ndarray  # uint8 HxW, 0 or 255: the pixels that changed
    extra: dict[str, Any] = field(default_factory=dict)  # arrays are saved as PNGs beside


class ForgeryMethod:
    """Base class: validates inputs and outputs around :meth:`forge`.

    Subclasses set ``name`` and ``backend`` (by ``FORGERY_METHODS.register``), ``kept`` and
    ``needs_target``, list their options with defaults in ``defaults``, and implement
    :meth:`forge`.
    """

    name: str = ""
    backend: str = "classical"
    kept: str = "source"  # "target" for identity replacement
    needs_target: bool = True  # False: the target arguments are ignored
    # Where the target comes from: "pair" (the pairs table's appointed target) or "nearest"
    # (another identity's face nearest in landmarks, :func:`~fairforge.forgery.shard.nearest_targets`)
    target_choice: str = "pair"
    random: bool = False  # True: forge draws from rng, so another draw may change more
    # "test": fakes a detector is tested on; "training": fakes made for a detector to learn
    # from (SBI's self-blends, Face X-ray's blends, FWA's warps), which the tables score
    # apart from the dataset's own fakes (:func:`training_methods`).
    purpose: str = "test"
    attempts: int = 3  # draws a random method gets to make a visible change
    defaults: dict[str, Any] = {}
    # Released weight files a backend loads (``official``): checked by the config check
    # before any job runs (fairforge.forgery.releases).
    release_files: tuple[ReleaseFile, ...] = ()

    def __init__(self, **options: Any) -> None:
        unknown = sorted(set(options) - set(self.defaults))
        if unknown:
            raise ValueError(
                f"{self.name} ({self.backend}) has no option(s) {unknown}; "
                f"options: {sorted(self.defaults)}"
            )
        self.options = {**self.defaults, **options}

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> dict[str, str]:
        """Check a config's options for this method without building it: unknown options
        and missing release files raise; returns the release files' paths by option."""
        unknown = sorted(set(options) - set(cls.defaults))
        if unknown:
            raise ValueError(
                f"{cls.name} ({cls.backend}) has no option(s) {unknown}; "
                f"options: {sorted(cls.defaults)}"
            )
        return check_release_files(cls.name, cls.backend, cls.release_files, options)

    @property
    def replaces_identity(self) -> bool:
        return self.kept == "target"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, backend={self.backend!r})"

    def __call__(
        self,
        source_img: np.ndarray,
        source_lm: np.ndarray,
        target_img: np.ndarray | None,
        target_lm: np.ndarray | None,
        rng: np.random.Generator,
    ) -> ForgeryResult:
        source_img, source_lm = check_face(source_img, source_lm, "source")
        if self.needs_target:
            if target_img is None or target_lm is None:
                raise ForgeryError(f"{self.name} needs a target face")
            target_img, target_lm = check_face(target_img, target_lm, "target")
            if target_img.shape != source_img.shape:
                raise ForgeryError(
                    f"source and target crops differ in size "
                    f"({source_img.shape[:2]} vs {target_img.shape[:2]})"
                )
        kept = target_img if self.kept == "target" else source_img
        # A random method gets a few draws (from the same generator, so still deterministic)
        # to make a visible change; a fake that stays a near-copy is a failure, not a fake.
        for _ in range(self.attempts if self.random else 1):
            try:
                with single_threaded_blas():
                    result = self.forge(source_img, source_lm, target_img, target_lm, rng)
            except cv2.error as err:
                first = str(err).strip().splitlines()[-1] if str(err).strip() else "cv2.error"
                raise ForgeryError(f"{self.name}: OpenCV failed: {first}") from err
            _check_result(result, kept.shape, self.name)
            energy = change_energy(result.image, kept, result.mask)
            if energy >= NEAR_INVISIBLE:
                return result
        raise ForgeryError(
            f"{self.name}: no visible change (mean change {energy:.2f} grey levels inside "
            f"the mask, under {NEAR_INVISIBLE:g})"
        )

    def forge(
        self,
        source_img: np.ndarray,
        source_lm: np.ndarray,
        target_img: np.ndarray | None,
        target_lm: np.ndarray | None,
        rng: np.random.Generator,
    ) -> ForgeryResult:
        raise NotImplementedError


@lru_cache(maxsize=1)
def _blas_controller():
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def single_threaded_blas():
    """Context limiting BLAS/LAPACK to one thread (a no-op without threadpoolctl).

    The linear algebra here is tiny (a ~130x130 spline system, skinny products); a threaded
    OpenBLAS spends far longer waking threads than computing, and on a busy machine a
    130x130 solve measured 190 ms threaded against 0.3 ms on one thread.
    """
    ctl = _blas_controller()
    return ctl.limit(limits=1, user_api="blas") if ctl is not None else contextlib.nullcontext()


def method_key(name: str, backend: str) -> str:
    return f"{name}/{backend}"


def _check_method(key: str, cls: type[ForgeryMethod], meta: dict) -> dict:
    """A method registration, ``@FORGERY_METHODS.register("{method}/{backend}")``: the class
    learns its ``name`` and ``backend`` from the key; the metadata say which method and
    backend it is, with its ``kept``, ``target_choice`` and ``purpose``."""
    name, _, backend = key.partition("/")
    if not name or not backend or "/" in backend:
        raise ValueError(f"forgery method key {key!r} must be '<method>/<backend>'")
    if meta:
        raise TypeError(f"{key}: a method's metadata are its class attributes, not {meta}")
    cls.name, cls.backend = name, backend
    return {
        "method": name,
        "backend": backend,
        "kept": cls.kept,
        "target_choice": cls.target_choice,
        "purpose": cls.purpose,
    }


# One member per implementation, keyed "{method}/{backend}" (``method_key``); the metadata
# says which method and backend it is, so the methods and their backends are listed from it.
FORGERY_METHODS: Registry[type[ForgeryMethod]] = Registry("forgery method", check=_check_method)

#: The fakes a training loop makes on the fly from one real face, fresh each epoch (the
#: detector's ``online_forgery``): each a function ``(img, lm, rng, partner) -> (real, fake,
#: X-ray map)``, ``partner`` (image, landmarks) of another identity's face or None;
#: :func:`fairforge.forgery.blend.online_blend` seeds and calls them.
ONLINE_FORGERIES: Registry = Registry("online_forgery")


def list_methods() -> list[str]:
    return sorted({FORGERY_METHODS.metadata(key)["method"] for key in FORGERY_METHODS})


def training_methods() -> list[str]:
    """The methods whose fakes are made for training (``purpose = "training"``: SBI, Face
    X-ray's blends, FWA): detectors learn from them, so a dataset's detection AUC leaves them
    out and scores them in rows of their own."""
    keys = FORGERY_METHODS.names(purpose="training")
    return sorted({FORGERY_METHODS.metadata(key)["method"] for key in keys})


def list_backends(name: str) -> list[str]:
    return sorted(
        FORGERY_METHODS.metadata(key)["backend"] for key in FORGERY_METHODS.names(method=name)
    )


def backend_options(name: str, backend: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options of ``options`` (a config's ``forgery.options.<name>``) that ``name``'s
    ``backend`` takes: a method compared across backends (``forgery.quality.compare_backends``)
    holds the options of each in one block."""
    defaults = FORGERY_METHODS.get(method_key(name, backend)).defaults
    return {k: v for k, v in options.items() if k in defaults}


def check_method_options(name: str, backends, options: dict[str, Any]) -> None:
    """Check ``options`` of method ``name`` run with ``backends`` (the first its forgery's,
    the others the quality card's): every option belongs to one of them, and each backend's
    release files exist (:meth:`ForgeryMethod.check_options`)."""
    classes = [FORGERY_METHODS.get(method_key(name, b)) for b in backends]
    known = set().union(*(cls.defaults for cls in classes))
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(
            f"{name} ({', '.join(backends)}) has no option(s) {unknown}; options: {sorted(known)}"
        )
    for backend, cls in zip(backends, classes):
        cls.check_options(backend_options(name, backend, options))


def create_method(name: str, backend: str = "classical", **options: Any) -> ForgeryMethod:
    """Build method ``name`` with ``backend``; an unknown pair raises
    :class:`~fairforge.registry.UnknownName`, which lists the ``method/backend`` pairs."""
    return FORGERY_METHODS.create(method_key(name, backend), **options)


# --------------------------------------------------------------------------- input checks


def as_landmarks(value: Any) -> np.ndarray:
    """68x2 float32 from an array, nested lists, or a parquet cell (object array of arrays)."""
    if value is None:
        raise ForgeryError("no landmarks")
    arr = np.asarray(value)
    if arr.dtype == object:
        arr = np.stack([np.asarray(v, dtype=np.float64) for v in arr])
    arr = np.asarray(arr, dtype=np.float32)
    if arr.size != N_LANDMARKS * 2:
        raise ForgeryError(f"expected {N_LANDMARKS} landmarks, got an array of shape {arr.shape}")
    return arr.reshape(N_LANDMARKS, 2)


def eye_centers(lm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centres of the subject's right eye (image left, points 36-41) and left eye (42-47)."""
    return lm[36:42].mean(0), lm[42:48].mean(0)


def interocular(lm: np.ndarray) -> float:
    left, right = eye_centers(lm)
    return float(np.linalg.norm(right - left))


def check_face(img: np.ndarray, lm: Any, role: str) -> tuple[np.ndarray, np.ndarray]:
    img = np.asarray(img)
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
        raise ForgeryError(f"{role} image must be uint8 RGB HxWx3, got {img.dtype} {img.shape}")
    lm = as_landmarks(lm)
    if not np.isfinite(lm).all():
        raise ForgeryError(f"{role} landmarks are not finite")
    h, w = img.shape[:2]
    outside = (lm[:, 0] < 0) | (lm[:, 1] < 0) | (lm[:, 0] > w - 1) | (lm[:, 1] > h - 1)
    if outside.any():
        # Named by face part, so a failure table shows what the crop cut (e.g. the chin).
        raise ForgeryError(
            f"{role} landmarks outside the crop: {parts_of(np.flatnonzero(outside))}"
        )
    hull_area = float(cv2.contourArea(cv2.convexHull(lm.astype(np.float32))))
    # A face smaller than ~2% of the crop side between the eyes cannot be warped sensibly.
    if interocular(lm) < 0.02 * min(h, w) or hull_area < 0.002 * h * w:
        raise ForgeryError(f"{role} landmarks are degenerate (collapsed face shape)")
    return img, lm


def change_energy(fake: np.ndarray, kept: np.ndarray, mask: np.ndarray) -> float:
    """Mean absolute difference (grey levels, mean over channels) inside ``mask``."""
    sel = np.asarray(mask) > 0
    if not sel.any():
        return 0.0
    diff = np.abs(fake.astype(np.int16) - kept.astype(np.int16)).mean(axis=2)
    return float(diff[sel].mean())


def _check_result(result: ForgeryResult, shape: tuple[int, ...], name: str) -> None:
    if result.image.shape != shape or result.image.dtype != np.uint8:
        raise AssertionError(
            f"{name} returned image {result.image.dtype} {result.image.shape}, "
            f"expected uint8 {shape}"
        )
    if result.mask.shape != shape[:2] or result.mask.dtype != np.uint8:
        raise AssertionError(f"{name} returned mask {result.mask.dtype} {result.mask.shape}")
    if not result.mask.any():
        raise ForgeryError(f"{name}: empty manipulation mask")


# --------------------------------------------------------------------------- shared image ops


def polygon_mask(points: np.ndarray, shape: tuple[int, ...], convex: bool = True) -> np.ndarray:
    """uint8 0/255 mask of the (convex hull of the) points, sub-pixel accurate."""
    mask = np.zeros(shape[:2], np.uint8)
    shift = 4  # fixed-point bits: polygons keep sub-pixel vertex positions
    pts = np.round(np.asarray(points, np.float64) * (1 << shift)).astype(np.int32)
    if convex:
        cv2.fillConvexPoly(mask, cv2.convexHull(pts), 255, cv2.LINE_8, shift)
    else:
        cv2.fillPoly(mask, [pts], 255, cv2.LINE_8, shift)
    return mask


def disk(radius: int) -> np.ndarray:
    r = max(int(radius), 0)
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1))


def erode(mask: np.ndarray, radius: int) -> np.ndarray:
    return cv2.erode(mask, disk(radius)) if radius > 0 else mask.copy()


def dilate(mask: np.ndarray, radius: int) -> np.ndarray:
    return cv2.dilate(mask, disk(radius)) if radius > 0 else mask.copy()


def feather(mask: np.ndarray, radius: int, inside: bool = True) -> np.ndarray:
    """Soft float32 weight in [0, 1] from a 0/255 mask, with a finite support.

    ``inside=True`` keeps the support within the mask (erode, then blur by the same radius);
    ``inside=False`` lets it grow ``radius`` pixels past the mask edge.
    """
    m = (mask > 0).astype(np.float32)
    if radius <= 0:
        return m
    if inside:
        m = cv2.erode(m, disk(radius))
    k = 2 * int(radius) + 1
    alpha = cv2.GaussianBlur(m, (k, k), radius / 2.0, borderType=cv2.BORDER_CONSTANT)
    return clean_alpha(alpha)


def clean_alpha(alpha: np.ndarray) -> np.ndarray:
    """Zero weights too small to move a uint8 value, so the support equals the change."""
    alpha = np.clip(alpha.astype(np.float32), 0.0, 1.0)
    alpha[alpha < 1.0 / 255.0] = 0.0
    return alpha


def composite(
    fake: np.ndarray, kept: np.ndarray, alpha: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Alpha-blend ``fake`` over ``kept``; returns (uint8 image, 0/255 mask of alpha > 0)."""
    alpha = clean_alpha(alpha)
    a = alpha[..., None]
    out = fake.astype(np.float32) * a + kept.astype(np.float32) * (1.0 - a)
    out = np.clip(out + 0.5, 0, 255).astype(np.uint8)
    support = alpha > 0
    out[~support] = kept[~support]
    return out, support.astype(np.uint8) * 255


def colour_transfer_lab(
    img: np.ndarray, ref: np.ndarray, mask: np.ndarray, ref_mask: np.ndarray | None = None
) -> np.ndarray:
    """Match LAB mean and std of ``img`` inside ``mask`` to ``ref`` inside ``ref_mask``."""
    sel = mask > 0
    ref_sel = (ref_mask if ref_mask is not None else mask) > 0
    if sel.sum() < 16 or ref_sel.sum() < 16:
        return img.copy()
    lab = cv2.cvtColor(img, cv2.COLOR_RGB2LAB).astype(np.float32)
    ref_lab = cv2.cvtColor(ref, cv2.COLOR_RGB2LAB).astype(np.float32)
    mu, sd = lab[sel].mean(0), lab[sel].std(0) + 1e-3
    mu_r, sd_r = ref_lab[ref_sel].mean(0), ref_lab[ref_sel].std(0) + 1e-3
    # Limit the gain: a flat patch must not amplify noise into texture.
    gain = np.clip(sd_r / sd, 0.25, 4.0)
    out = (lab - mu) * gain + mu_r
    return cv2.cvtColor(np.clip(out + 0.5, 0, 255).astype(np.uint8), cv2.COLOR_LAB2RGB)


def poisson_clone(
    src: np.ndarray, dst: np.ndarray, mask: np.ndarray, pad: int = 16, mode: int = cv2.NORMAL_CLONE
) -> np.ndarray:
    """cv2.seamlessClone of the aligned ``src`` into ``dst`` over ``mask``, kept in place.

    Both images are padded by reflection so a mask touching the crop edge still has a
    boundary, and the clone is centred on the mask's bounding box so that nothing shifts.
    OpenCV re-solves the whole bounding box, so the caller composites through the mask.
    """
    if not (mask > 0).any():
        raise ForgeryError("empty blending mask")
    s = cv2.copyMakeBorder(src, pad, pad, pad, pad, cv2.BORDER_REFLECT)
    d = cv2.copyMakeBorder(dst, pad, pad, pad, pad, cv2.BORDER_REFLECT)
    m = cv2.copyMakeBorder(
        ((mask > 0) * 255).astype(np.uint8), pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=0
    )
    x, y, w, h = cv2.boundingRect(m)
    out = cv2.seamlessClone(s, d, m, (x + w // 2, y + h // 2), mode)
    return out[pad:-pad, pad:-pad]


def similarity_transform(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """2x3 least-squares similarity (Umeyama) mapping ``src`` points onto ``dst``."""
    src = np.asarray(src, np.float64)
    dst = np.asarray(dst, np.float64)
    mu_s, mu_d = src.mean(0), dst.mean(0)
    s0, d0 = src - mu_s, dst - mu_d
    var = (s0**2).sum() / len(src)
    if var < 1e-9:
        raise ForgeryError("degenerate points for a similarity transform")
    cov = d0.T @ s0 / len(src)
    u, sig, vt = np.linalg.svd(cov)
    sign = np.eye(2)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        sign[1, 1] = -1
    rot = u @ sign @ vt
    scale = np.trace(np.diag(sig) @ sign) / var
    mat = np.zeros((2, 3))
    mat[:, :2] = scale * rot
    mat[:, 2] = mu_d - scale * rot @ mu_s
    return mat


def apply_affine(mat: np.ndarray, pts: np.ndarray) -> np.ndarray:
    pts = np.asarray(pts, np.float64)
    return (pts @ mat[:, :2].T + mat[:, 2]).astype(np.float32)


def five_points(lm: np.ndarray) -> np.ndarray:
    """The 5 alignment points (eyes, nose tip, mouth corners) derived from the 68."""
    left, right = eye_centers(lm)
    return np.stack([left, right, lm[30], lm[48], lm[54]]).astype(np.float32)
