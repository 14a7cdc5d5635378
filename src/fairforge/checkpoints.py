"""Reading released weight files: one owner for every loader that takes a user's checkpoint.

Files are read with ``torch.load(..., weights_only=True)``: tensors and plain containers
only, never a pickled object. A release that ships a whole pickled model (an ``nn.Module``
saved with ``torch.save(model)``) needs a one-time offline conversion to a state dict,
documented where the release is named (README, "Forgery backends").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Containers that checkpoints wrap their tensors in, looked into in this order (a release
# with another wrapper passes its own).
STATE_CONTAINERS = ("state_dict", "model", "net")


class CheckpointMismatch(ValueError):
    """A weight file whose keys or shapes do not fit the network built to take it."""


def listing(keys, limit: int = 12) -> str:
    """``N: k1, k2, ...``: the first ``limit`` of ``keys`` in sorted order, and their count."""
    keys = sorted(keys)
    shown = ", ".join(keys[:limit])
    return f"{len(keys)}: {shown}" + (", ..." if len(keys) > limit else "")


def read_state_dict(
    path: str | Path,
    what: str = "pretrained weights",
    containers=STATE_CONTAINERS,
    mmap: bool = False,
) -> dict:
    """The tensor dict in ``path`` (``weights_only=True``), unwrapped from the first of
    ``containers`` it holds and from ``module.`` prefixes (DataParallel); a missing file
    names the path. With ``mmap`` the tensors are mapped, not read."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} not found: expected a file at {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except Exception as err:  # an unpickling error names a class weights_only refuses
        raise CheckpointMismatch(
            f"{what} at {path} cannot be read as a state dict with weights_only=True "
            f"({type(err).__name__}: {str(err).strip().splitlines()[0] if str(err) else ''}); "
            "a whole pickled model must be converted to its state_dict once, offline"
        ) from None
    if not isinstance(state, dict):
        raise CheckpointMismatch(
            f"{what} at {path} hold a {type(state).__name__}, not a state dict"
        )
    return unwrap_state(state, containers)


def unwrap_state(state: dict, containers=STATE_CONTAINERS) -> dict:
    """The tensor dict inside the first of ``containers`` that ``state`` holds, without
    DataParallel's ``module.`` prefixes."""
    for key in containers:
        if isinstance(state.get(key), dict):
            state = state[key]
            break
    if state and all(isinstance(k, str) and k.startswith("module.") for k in state):
        state = {k[len("module.") :]: v for k, v in state.items()}
    return state


def load_exact(module: Any, state: dict, what: str) -> None:
    """Load ``state`` into ``module`` requiring every key and shape to match both ways;
    raises :class:`CheckpointMismatch` listing the first mismatches of each kind."""
    ours = module.state_dict()
    missing = [k for k in ours if k not in state and not k.endswith("num_batches_tracked")]
    unused = [k for k in state if k not in ours]
    wrong = [
        f"{k} {tuple(state[k].shape)}≠{tuple(v.shape)}"
        for k, v in ours.items()
        if k in state and hasattr(state[k], "shape") and tuple(state[k].shape) != tuple(v.shape)
    ]
    problems = []
    if missing:
        problems.append(f"parameters the file does not provide ({listing(missing)})")
    if wrong:
        problems.append(f"shape mismatches ({listing(wrong)})")
    if unused:
        problems.append(f"file keys no parameter takes ({listing(unused)})")
    if problems:
        raise CheckpointMismatch(f"{what}: " + "; ".join(problems))
    module.load_state_dict({k: v for k, v in state.items() if k in ours}, strict=False)
