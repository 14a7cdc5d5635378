"""The synthetic world's defaults: the one place its group names and sizes are set.

The workflow, the synthetic adapters and the renderer's listing all read them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

DEFAULT_TONES = ("tone1", "tone2", "tone3", "tone4")
DEFAULT_GENDERS = ("female", "male")
DEFAULT_SIZE = 400

# What a ``synthetic`` dataset renders when its config gives no ``options``.
SYNTHETIC_DEFAULTS: Mapping[str, object] = MappingProxyType(
    {
        "subjects_per_group": 8,
        "images_per_subject": 10,
        "size": DEFAULT_SIZE,
        "tones": list(DEFAULT_TONES),
        "genders": list(DEFAULT_GENDERS),
    }
)


def synthetic_options(options: Mapping[str, object] | None = None) -> dict:
    """:data:`SYNTHETIC_DEFAULTS` under a dataset's ``options`` (fresh lists each call)."""
    merged = {
        key: list(value) if isinstance(value, list) else value
        for key, value in SYNTHETIC_DEFAULTS.items()
    }
    merged.update(options or {})
    return merged
