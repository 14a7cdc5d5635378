"""What running a network needs, in training and inference alike: the device, the precision
of its forward pass, and fairforge's detector checkpoints.

A detector checkpoint is a payload of plain values and tensors (the architecture, the
constructor's config, the training config, the input size and normalisation, the epoch and
validation AUC, the precision inference uses, the state dict), written by
:mod:`fairforge.training.detector` and read here with ``weights_only=True``
(:func:`fairforge.checkpoints.read_state_dict`); :func:`load_checkpoint` rebuilds the model.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from fairforge.checkpoints import read_state_dict
from fairforge.detectors import create_detector

PRECISIONS = ("fp32", "bf16")


def pick_device(device: str | torch.device | None = "auto") -> torch.device:
    """``device``, or with ``auto`` (or None) CUDA when there is one, else the CPU; a CUDA
    device asked for where there is none is an error."""
    device = "auto" if device is None else str(device)
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device {device!r} requested but CUDA is not available")
    return torch.device(device)


def autocast(device: torch.device, precision: str = "fp32"):
    """The context a forward pass runs in at ``precision`` (bf16: autocast on ``device``)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "bf16":
        return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def read_checkpoint(path: str | Path, mmap: bool = False) -> dict:
    """The payload of a detector checkpoint (network or classical), tensors only; with
    ``mmap`` the tensors are mapped, not read (for a look at the metadata)."""
    return read_state_dict(path, "detector checkpoint", containers=(), mmap=mmap)


def checkpoint_arch(path: str | Path) -> str:
    """The registered detector a checkpoint was written for, without reading its weights
    (a prediction job then loads them once)."""
    return read_checkpoint(path, mmap=True)["arch"]


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu"):
    """Rebuild a network detector from a fairforge checkpoint; returns (model, metadata)."""
    payload = read_checkpoint(path)
    for key in ("arch", "model_config", "state_dict"):
        if key not in payload:
            raise ValueError(
                f"{path} is not a fairforge checkpoint (no {key!r}); "
                "for a DeepfakeBench checkpoint use load_deepfakebench"
            )
    model = create_detector(payload["arch"], **payload["model_config"])
    model.load_state_dict(payload["state_dict"])
    meta = {k: v for k, v in payload.items() if k != "state_dict"}
    return model.to(device).eval(), meta


def write_checkpoint(path: str | Path, payload: dict) -> Path:
    """Save ``payload`` (plain values and tensors) at ``path`` in one step: written beside
    it, then moved there, so a reader never sees half a file; the folder is made."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)
    return path
