"""Image operations by name, with severity levels, and variants ``{op}@{level}``.

An operation is a small class (albumentations style) built for one level::

    op = create_op("jpeg", level=60)
    out = op(image, rng)            # uint8 RGB HxWx3 in, same shape and dtype out

``apply_variant(image, "jpeg@60", sample_id)`` seeds the op with
``rng_for(sample_id, variant)``, so a perturbed sample is the same whatever the job order.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar, Mapping

import numpy as np

from fairforge.seeding import rng_for

CLEAN = "clean"


class PerturbationError(ValueError):
    """A perturbation that cannot be built or applied; the message names what is wrong."""


class UnknownOperation(PerturbationError):
    pass


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
    """One image operation at one severity level.

    Subclasses set ``name``, ``category``, ``levels`` and ``params`` (the parameter of each
    level, aligned with ``levels``) and implement :meth:`apply`. ``self.param`` is the
    parameter of the chosen level.
    """

    name: ClassVar[str] = ""
    category: ClassVar[str] = ""
    levels: ClassVar[tuple[int, ...]] = (1, 2, 3, 4, 5)
    params: ClassVar[tuple[Any, ...]] = ()

    def __init__(self, level: int):
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
            raise InvalidLevel(f"{self.name}: level must be an integer, got {level!r}")
        if int(level) not in self.levels:
            raise InvalidLevel(
                f"{self.name}: level {level} is not one of {list(self.levels)}")
        self.level = int(level)
        self.param = self.params[self.levels.index(self.level)] if self.params else self.level

    def check_available(self) -> None:
        """Raise :class:`OperationUnavailable` when the op cannot run (missing weights)."""

    def __call__(self, image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        check_image(image, f"{self.name}@{self.level} input")
        out = self.apply(image, rng)
        if out.shape != image.shape or out.dtype != np.uint8:
            raise AssertionError(f"{self.name} returned {out.dtype} {out.shape}")
        return out

    def apply(self, image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    @property
    def variant(self) -> str:
        return f"{self.name}@{self.level}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(level={self.level}, param={self.param!r})"


_REGISTRY: dict[str, type[Operation]] = {}
_BUILTINS_LOADED = False


def register(cls: type[Operation]) -> type[Operation]:
    """Class decorator adding an op to the registry under ``cls.name``."""
    if not cls.name or not cls.category:
        raise TypeError(f"{cls.__name__} needs a name and a category")
    if cls.params and len(cls.params) != len(cls.levels):
        raise TypeError(f"{cls.name}: params and levels differ in length")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise TypeError(f"operation {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def _load_builtins() -> None:
    # The op modules register themselves on import; importing them here lets callers use
    # this module alone without caring about import order.
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        from fairforge.perturb import deeperforensics, distance, ops  # noqa: F401


def get_op_class(name: str) -> type[Operation]:
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownOperation(
            f"unknown operation {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def list_ops(category: str | None = None) -> list[str]:
    """Registered op names (sorted), optionally of one category."""
    _load_builtins()
    return sorted(n for n, c in _REGISTRY.items() if category is None or c.category == category)


def create_op(name: str, level: int, **options: Any) -> Operation:
    """Build op ``name`` at ``level``; ``options`` go to ops that take them (weights paths).

    Raises :class:`UnknownOperation`, :class:`InvalidLevel`, or
    :class:`OperationUnavailable` when the op's weights are missing.
    """
    cls = get_op_class(name)
    try:
        op = cls(level, **options)
    except TypeError as err:
        if options and "argument" in str(err):
            raise PerturbationError(
                f"{name}: unsupported option(s) {sorted(options)}") from None
        raise
    op.check_available()
    return op


_VARIANT = re.compile(r"^([a-z][a-z0-9_+]*)@(-?\d+)$")


def parse_variant(variant: str) -> tuple[str, int]:
    """``"jpeg@60"`` -> ``("jpeg", 60)``. ``clean`` is not an op variant and is refused here."""
    match = _VARIANT.match(variant.strip()) if isinstance(variant, str) else None
    if match is None:
        raise PerturbationError(
            f"variant {variant!r} is not of the form '{{op}}@{{level}}' (e.g. 'jpeg@60')")
    return match.group(1), int(match.group(2))


def _options_for(name: str, options: Mapping[str, Mapping[str, Any]] | None) -> dict:
    return dict((options or {}).get(name, {}))


def op_for_variant(variant: str,
                   options: Mapping[str, Mapping[str, Any]] | None = None) -> Operation | None:
    """The op of a variant (``None`` for ``clean``). ``options`` maps op name -> kwargs."""
    if variant == CLEAN:
        return None
    name, level = parse_variant(variant)
    return create_op(name, level, **_options_for(name, options))


def apply_variant(image: np.ndarray, variant: str, sample_id: str,
                  options: Mapping[str, Mapping[str, Any]] | None = None) -> np.ndarray:
    """Apply a variant to one image, seeded by ``(sample_id, variant)``.

    ``clean`` returns the image itself (checked, not copied).
    """
    check_image(image, f"{sample_id}")
    op = op_for_variant(variant, options)
    if op is None:
        return image
    return op(image, rng_for(sample_id, variant))


def unavailable_reason(variant: str,
                       options: Mapping[str, Mapping[str, Any]] | None = None) -> str | None:
    """``None`` when the variant can run, otherwise why not (with the expected path).

    Unknown ops and bad levels still raise: they are configuration errors, not missing files.
    """
    try:
        op_for_variant(variant, options)
    except OperationUnavailable as err:
        return str(err)
    return None


def available(variant: str, options: Mapping[str, Mapping[str, Any]] | None = None) -> bool:
    return unavailable_reason(variant, options) is None


def variants_of(name: str) -> list[str]:
    """Every variant of one op, mildest first."""
    return [f"{name}@{level}" for level in get_op_class(name).levels]

