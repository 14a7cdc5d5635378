"""One registry for every family of named things: detectors, forgery methods, operations,
augmentations, encoders, face backends and source adapters.

A family owns one :class:`Registry`; its members register themselves by name, with
metadata, when their module is imported (the family's package imports its member modules,
the timm habit)::

    DETECTORS = Registry("detector")

    @DETECTORS.register("meso4", kind="network")
    class Meso4(Detector): ...

    DETECTORS.create("meso4", input_size=64)
    DETECTORS.names()                  # sorted names
    DETECTORS.metadata("meso4")        # {"kind": "network"}

Every family raises the same errors: :class:`UnknownName` (it lists the valid names) and
:class:`DuplicateName`. A family whose members must satisfy more (a detector's ``kind``, an
operation's levels) gives its registry a ``check``: called on every registration with the
name, the member and the metadata, it raises on a bad member and returns the metadata to
keep (with defaults filled in, or read off the class).

A family whose members need heavy imports (torch) that most processes never use names
their modules as ``deferred``: they are imported the first time the family is asked for a
name it does not hold yet, or for its list, and register their members as any module does::

    BACKBONES = Registry("encoder backbone", deferred=("fairforge.encoders.iresnet", ...))
    "ir_se152" in BACKBONES            # imports the deferred modules: the name is found
    BACKBONES.names()                  # every name is listed

Tests add a member for their duration only::

    with DETECTORS.registered("toy", Toy, kind="network"):
        ...
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class RegistryError(Exception):
    """Base class of the registry's errors."""


class UnknownName(RegistryError, KeyError, ValueError):
    """A name that no member of the family was registered under."""

    def __init__(self, family: str, name: object, valid: list[str]):
        self.family = family
        self.name = name
        self.valid = valid
        super().__init__(f"unknown {family} {name!r}; valid: {', '.join(valid) or '(none)'}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class DuplicateName(RegistryError, ValueError):
    """A second, different member registered under a name that is taken."""


class Registry(Generic[T]):
    """Named members of one family (classes or factory functions) with their metadata."""

    def __init__(
        self,
        family: str,
        check: Callable[[str, T, dict[str, Any]], dict[str, Any]] | None = None,
        deferred: Sequence[str] = (),
    ):
        self.family = family
        self._check = check
        self._members: dict[str, T] = {}
        self._metadata: dict[str, dict[str, Any]] = {}
        self._deferred = list(deferred)

    def _import_deferred(self) -> None:
        """Import the deferred member modules (once): their members register. A module that
        fails to import stays deferred, so the next lookup raises again instead of listing
        the family without its members."""
        while self._deferred:
            module = self._deferred.pop(0)  # popped first: the module may list the family
            try:
                importlib.import_module(module)
            except BaseException:
                self._deferred.insert(0, module)
                raise

    def register(self, name: str, member: T | None = None, **metadata: Any):
        """Register ``member`` under ``name``; without ``member``, a decorator.

        Registering the same object twice under one name is a no-op (a module imported
        twice); a different object under a taken name raises :class:`DuplicateName`. The
        family's ``check``, if any, validates the member and gives the metadata kept.
        """
        if not isinstance(name, str) or not name:
            raise RegistryError(f"{self.family}: a name must be a non-empty string, got {name!r}")

        def add(obj: T) -> T:
            taken = self._members.get(name)
            if taken is not None and taken is not obj and _qualname(taken) != _qualname(obj):
                raise DuplicateName(
                    f"{self.family} {name!r} is registered twice: "
                    f"{_qualname(taken)} and {_qualname(obj)}"
                )
            meta = dict(metadata)
            if self._check is not None:
                meta = self._check(name, obj, meta)
            self._members[name] = obj
            self._metadata[name] = meta
            return obj

        return add if member is None else add(member)

    def unregister(self, name: str) -> T:
        """Remove the member registered under ``name`` and return it."""
        member = self.get(name)
        del self._members[name]
        del self._metadata[name]
        return member

    @contextmanager
    def registered(self, name: str, member: T, **metadata: Any) -> Iterator[T]:
        """Register ``member`` under ``name`` for the ``with`` block only (for tests); the
        name must be free, and is free again afterwards."""
        if name in self:
            raise DuplicateName(f"{self.family} {name!r} is already registered")
        self.register(name, member, **metadata)
        try:
            yield member
        finally:
            if self._members.get(name) is member:
                self.unregister(name)

    def get(self, name: str) -> T:
        """The member registered under ``name``."""
        if name not in self:
            raise UnknownName(self.family, name, self.names())
        return self._members[name]

    def create(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call the member registered under ``name`` (build the class or call the factory)."""
        factory: Callable[..., Any] = self.get(name)  # type: ignore[assignment]
        return factory(*args, **kwargs)

    def metadata(self, name: str) -> dict[str, Any]:
        """The metadata given at registration (a copy)."""
        self.get(name)
        return dict(self._metadata[name])

    def names(self, **where: Any) -> list[str]:
        """Sorted names, optionally only those whose metadata has every ``key=value`` given."""
        self._import_deferred()
        return sorted(
            n
            for n, meta in self._metadata.items()
            if all(meta.get(k) == v for k, v in where.items())
        )

    def check(self, name: str) -> str:
        """``name`` if registered, else :class:`UnknownName` (for validating configs)."""
        self.get(name)
        return name

    def __contains__(self, name: object) -> bool:
        try:
            if name in self._members:
                return True
        except TypeError:  # an unhashable name is no member's
            return False
        self._import_deferred()
        return name in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self._import_deferred()
        return len(self._members)

    def __repr__(self) -> str:
        return f"Registry({self.family!r}, {len(self)} members)"


def _qualname(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
