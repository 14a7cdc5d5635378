"""The files an ``official`` forgery backend loads, and where their authors publish them.

A backend that runs an author's released network (``backend: official``) lists its files as
:class:`ReleaseFile` entries on the class (``release_files``). The config check calls
:func:`check_release_files` before any job is planned, so a missing file stops the run at
once with the method, the option, the expected file and the release it comes from. This
module imports no torch: planning stays light.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path


class ReleaseFileError(FileNotFoundError):
    """A configured release file that is unset or missing; the text says what to supply."""


@dataclass(frozen=True)
class ReleaseFile:
    option: str  # the method option that holds the file's path
    filename: str  # the file's name as its release publishes it
    release: str  # where the authors publish it (repository and download page)
    what: str  # what the file is, in a few words
    required: bool = True


def check_release_files(method: str, backend: str, files, options: dict) -> dict[str, str]:
    """``{option: path}`` of every configured release file of ``method``; raises
    :class:`ReleaseFileError` for a required file that is unset or not a file."""
    found = {}
    for spec in files:
        value = options.get(spec.option)
        if not value:
            if spec.required:
                raise ReleaseFileError(
                    f"{method} backend '{backend}' needs forgery.options.{method}.{spec.option}: "
                    f"the path to {spec.what} ({spec.filename}, released at {spec.release})"
                )
            continue
        if not Path(value).is_file():
            raise ReleaseFileError(
                f"{method} backend '{backend}': {spec.option} expected {spec.what} "
                f"({spec.filename}, released at {spec.release}) at {value}, and no file is there"
            )
        found[spec.option] = str(value)
    return found


# Releases that fairforge cannot read as published (a whole pickled model; a checkpoint that
# pickles its training options beside the weights, as HiFiC's), converted once, offline, to
# a weights-only file: name -> (module, function(src, dst) -> summary),
# run by ``python -m fairforge convert-release NAME IN OUT``. The module is imported only then.
CONVERSIONS = {
    "simswap-arcface": ("fairforge.forgery.nets.arcface", "convert_release"),
    "hific": ("fairforge.perturb.hific", "convert_release"),
}


def convert_release(name: str, src: str | Path, dst: str | Path) -> dict:
    """Run the conversion ``name`` of :data:`CONVERSIONS` from ``src`` to ``dst``."""
    if name not in CONVERSIONS:
        raise ValueError(f"no conversion {name!r}; conversions: {sorted(CONVERSIONS)}")
    module, function = CONVERSIONS[name]
    return getattr(importlib.import_module(module), function)(src, dst)
