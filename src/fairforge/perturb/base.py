"""The operation model: one :class:`Operation` base class for image and video operations,
the ``OPERATIONS`` registry, and the errors of the perturbation stage.

An operation is a small class (albumentations style) built for one severity level::

    op = create_op("jpeg", level=60)
    out = op(image, rng)            # uint8 RGB HxWx3 in, same shape and dtype out

Image operations (``kind="image"``) implement :meth:`Operation.apply` on one image. Video
operations (``kind="video"``, :class:`VideoOperation`) describe an ffmpeg filter chain and
encoding that :mod:`fairforge.video.ops` runs on whole clips; called on an image they raise
:class:`VideoOnlyOperation`. Variant names (``{op}@{level}``) and whether a variant can run
here are the business of :mod:`fairforge.perturb.variants`.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from fairforge.registry import Registry

KINDS = ("image", "video")


class PerturbationError(ValueError):
    """A perturbation that cannot be built or applied; the message names what is wrong."""


class InvalidLevel(PerturbationError):
    pass


class InvalidImage(PerturbationError):
    pass


class OperationUnavailable(PerturbationError):
    """The op exists but lacks what it needs (weights). ``path`` is the file it expected."""

    def __init__(self, message: str, path: str | Path | None = None):
        super().__init__(message)
        self.path = None if path is None else Path(path)


class VideoOnlyOperation(PerturbationError):
    pass


def check_image(image: np.ndarray, where: str = "image") -> np.ndarray:
    """Raise :class:`InvalidImage` unless ``image`` is a non-empty uint8 HxWx3 array."""
    if not isinstance(image, np.ndarray):
        raise InvalidImage(f"{where}: expected a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise InvalidImage(f"{where}: expected uint8 pixels, got {image.dtype}")
    if image.ndim != 3 or image.shape[2] != 3:
        raise InvalidImage(f"{where}: expected an RGB HxWx3 array, got shape {image.shape}")
    if image.shape[0] < 2 or image.shape[1] < 2:
        raise InvalidImage(f"{where}: image too small {image.shape[:2]}")
    return image


class Operation:
    """One operation at one severity level.

    Subclasses set ``name``, ``category``, ``levels`` and ``params`` (the parameter of each
    level, aligned with ``levels``) and implement :meth:`apply`. ``self.param`` is the
    parameter of the chosen level (the level itself when ``params`` is empty).
    """

    name: ClassVar[str] = ""
    kind: ClassVar[str] = "image"
    category: ClassVar[str] = ""
    levels: ClassVar[tuple[int, ...]] = (1, 2, 3, 4, 5)
    params: ClassVar[tuple[Any, ...]] = ()
    #: How a parameter between the tabulated ones is rounded (:meth:`at_fraction`):
    #: ``"float"`` (kept), ``"int"`` (nearest integer), ``"odd"`` (nearest odd integer: a
    #: kernel size), or ``None``: the operation has only its tabulated levels.
    continuous: ClassVar[str | None] = None

    def __init__(self, level: int):
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
            raise InvalidLevel(f"{self.name}: level must be an integer, got {level!r}")
        if int(level) not in self.levels:
            raise InvalidLevel(f"{self.name}: level {level} is not one of {list(self.levels)}")
        self.level = int(level)
        self.param = self.params[self.levels.index(self.level)] if self.params else self.level

    def check_available(self) -> None:
        """Raise :class:`OperationUnavailable` when the op cannot run (missing weights)."""

    def param_rounding(self) -> str | None:
        """How :meth:`at_fraction` rounds a parameter (:attr:`continuous`; an instance may
        answer by its options, e.g. a kernel read as σ is not rounded)."""
        return self.continuous

    @classmethod
    def tabulated_range(cls) -> tuple[Any, Any]:
        """The parameters of the mildest and the harshest level (first and last of
        ``levels``; the level itself where there are no ``params``)."""
        table = cls.params or cls.levels
        return table[0], table[-1]

    def at_fraction(self, t: float) -> Operation:
        """A copy of this op whose parameter lies a fraction ``t`` (in [0, 1]) of the way
        from the mildest level's parameter to the harshest's, rounded as :meth:`param_rounding`
        says (a pair of parameters moves together, each on its own range). ``level`` of
        the copy is ``None``: it is not a tabulated level. Raises for an operation with
        only its tabulated levels."""
        kind = self.param_rounding()
        if kind is None:
            raise PerturbationError(f"{self.name} has no parameter range between its levels")
        if not 0.0 <= float(t) <= 1.0:
            raise PerturbationError(f"{self.name}: fraction {t} is not in [0, 1]")
        low, high = self.tabulated_range()
        if isinstance(low, tuple):
            value = tuple(_between(a, b, t, kind) for a, b in zip(low, high))
        else:
            value = _between(low, high, t, kind)
        op = copy.copy(self)
        op.level, op.param = None, value
        return op

    def __call__(self, image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        check_image(image, f"{self.name}@{self.level} input")
        out = self.apply(image, rng)
        if out.shape != image.shape or out.dtype != np.uint8:
            raise AssertionError(f"{self.name} returned {out.dtype} {out.shape}")
        return out

    def apply(self, image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(level={self.level}, param={self.param!r})"


ROUNDINGS = ("float", "int", "odd")


def _between(low: float, high: float, t: float, kind: str) -> float | int:
    value = float(low) + float(t) * (float(high) - float(low))
    if kind == "int":
        return int(math.floor(value + 0.5))
    if kind == "odd":
        return 2 * int(math.floor((value - 1.0) / 2.0 + 0.5)) + 1
    if kind != "float":
        raise PerturbationError(f"rounding {kind!r} is not one of {ROUNDINGS}")
    return value


# An ffmpeg filter: (filter name, positional args, keyword args).
Filter = tuple[str, tuple, dict]


class VideoOperation(Operation):
    """An operation on whole clips through ffmpeg: a filter chain and an encoding.

    ``compression``: the output is H.264 at CRF = the level; otherwise the output is
    lossless. ``keeps_size``: decoded frames have the input's size (flips, colour, noise).
    """

    kind: ClassVar[str] = "video"
    compression: ClassVar[bool] = False
    keeps_size: ClassVar[bool] = True
    description: ClassVar[str] = ""

    def filters(self, seed: int) -> list[Filter]:
        """The ffmpeg filter chain; ``seed`` drives random filters (temporal noise)."""
        return []

    def __call__(self, image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self.apply(image, rng)

    def apply(self, image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        raise VideoOnlyOperation(
            f"{self.name}@{self.level} is a video operation ({self.description}, via ffmpeg); "
            "it applies to video files in the video pipeline, not to single images"
        )


def _check_operation(name: str, cls: type[Operation], meta: dict) -> dict:
    """An operation registration, ``@OPERATIONS.register(name)``: the class learns its name;
    its ``kind``, ``category`` and ``levels`` (class attributes) become the metadata."""
    if meta:
        raise TypeError(f"{name}: an operation's metadata are its class attributes, not {meta}")
    if not cls.category:
        raise TypeError(f"{cls.__name__} needs a category")
    if cls.kind not in KINDS:
        raise TypeError(f"{name}: kind {cls.kind!r} is not one of {KINDS}")
    if cls.params and len(cls.params) != len(cls.levels):
        raise TypeError(f"{name}: params and levels differ in length")
    if cls.continuous is not None and cls.continuous not in ROUNDINGS:
        raise TypeError(f"{name}: continuous {cls.continuous!r} is not one of {ROUNDINGS}")
    cls.name = name
    return {"kind": cls.kind, "category": cls.category, "levels": tuple(cls.levels)}


OPERATIONS: Registry[type[Operation]] = Registry("operation", check=_check_operation)


def list_ops(category: str | None = None, kind: str | None = None) -> list[str]:
    """Registered op names (sorted), optionally of one category and/or kind."""
    where = {k: v for k, v in (("category", category), ("kind", kind)) if v is not None}
    return OPERATIONS.names(**where)


def create_op(name: str, level: int, **options: Any) -> Operation:
    """Build op ``name`` at ``level``; ``options`` go to ops that take them (weights paths).

    Raises :class:`~fairforge.registry.UnknownName`, :class:`InvalidLevel`, or
    :class:`OperationUnavailable` when the op's weights are missing.
    """
    cls = OPERATIONS.get(name)
    try:
        op = cls(level, **options)
    except TypeError as err:
        if options and "argument" in str(err):
            raise PerturbationError(f"{name}: unsupported option(s) {sorted(options)}") from None
        raise
    op.check_available()
    return op
