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
:class:`DuplicateName`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
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

    def __init__(self, family: str):
        self.family = family
        self._members: dict[str, T] = {}
        self._metadata: dict[str, dict[str, Any]] = {}

    def register(self, name: str, member: T | None = None, **metadata: Any):
        """Register ``member`` under ``name``; without ``member``, a decorator.

        Registering the same object twice under one name is a no-op (a module imported
        twice); a different object under a taken name raises :class:`DuplicateName`.
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
            self._members[name] = obj
            self._metadata[name] = dict(metadata)
            return obj

        return add if member is None else add(member)

    def get(self, name: str) -> T:
        """The member registered under ``name``."""
        try:
            return self._members[name]
        except (KeyError, TypeError):
            raise UnknownName(self.family, name, self.names()) from None

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
        return name in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._members)

    def __repr__(self) -> str:
        return f"Registry({self.family!r}, {len(self)} members)"


def _qualname(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
