"""Detector cost: parameters, FLOPs per image, latency per image and peak memory.

FLOPs are counted by ``torch.utils.flop_counter.FlopCounterMode`` on one image (a video
detector: one sequence of its ``frames`` frames) at the test resolution (multiply-adds count as 2 FLOPs; convolutions, matrix products and attention are
counted, element-wise ops, normalisation and pooling are not). Latency is timed the way
inference runs the model (:func:`fairforge.inference.prepare_model`: eval mode, on CUDA
channels_last inputs and the checkpoint's precision): per image, the median over ``repeats``
timed batches after ``warmup`` untimed ones, with the interquartile range of the repeats
(``latency_iqr_ms_bs*``). The workflow's ``efficiency`` job runs alone (all cores, and the
``timing`` resource that the profiles cap at 1), so other jobs do not share its cores. Peak
memory is CUDA's ``max_memory_allocated`` above what was allocated before the batch, or on CPU
the peak resident-set growth sampled every millisecond by a background thread, after returning
freed heap pages to the OS (a coarse figure: memory the allocator still holds is reused
without showing, so it can read low).
"""

from __future__ import annotations

import ctypes
import statistics
import threading
import time
from pathlib import Path

import psutil
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from fairforge.inference import prepare_model
from fairforge.training import autocast, load_checkpoint, pick_device


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def flops_per_image(model: nn.Module, input_size: int, device="cpu", in_chans: int = 3) -> int:
    """FLOPs of one forward pass on a single ``input_size``² image; for a video detector
    (``sequence_input``: Conv-LSTM) on one sequence of its ``frames`` frames, the unit it
    classifies (the Benchmark paper's Conv LSTM figure is per 20-frame clip). ``device``
    ``meta`` counts without computing."""
    device = torch.device(device)
    model = model.to(device).eval()
    shape = (1, in_chans, input_size, input_size)
    if getattr(model, "sequence_input", False):
        shape = (1, int(model.frames), *shape[1:])
    x = torch.randn(*shape, device=device)
    counter = FlopCounterMode(display=False)
    with torch.inference_mode(), counter:
        model(x)
    return int(counter.get_total_flops())


def _input(batch_size, in_chans, input_size, device) -> torch.Tensor:
    x = torch.randn(batch_size, in_chans, input_size, input_size, device=device)
    return x.contiguous(memory_format=torch.channels_last) if device.type == "cuda" else x


def latency_samples(
    model: nn.Module,
    input_size: int,
    batch_size: int,
    device="cpu",
    repeats: int = 10,
    warmup: int = 3,
    bf16: bool = False,
    in_chans: int = 3,
) -> list[float]:
    """Seconds per image of each of ``repeats`` timed batches of ``batch_size``."""
    device = torch.device(device)
    model = model.to(device).eval()
    x = _input(batch_size, in_chans, input_size, device)
    times = []
    with torch.inference_mode(), autocast(device, "bf16" if bf16 else "fp32"):
        for i in range(warmup + repeats):
            _sync(device)
            start = time.perf_counter()
            model(x)
            _sync(device)
            if i >= warmup:
                times.append((time.perf_counter() - start) / batch_size)
    return times


def latency_per_image(*args, **kwargs) -> float:
    """Median seconds per image (:func:`latency_samples`)."""
    return statistics.median(latency_samples(*args, **kwargs))


def _iqr(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[2] - q[0]


def _release_free_heap() -> None:
    """Hand freed heap pages back to the OS (glibc), so that a new peak shows in the RSS."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


class _RssPeak:
    """Peak resident-set size of this process while the block runs, sampled every ``interval``."""

    def __init__(self, interval: float = 0.001):
        self.interval = interval
        self.process = psutil.Process()
        self.peak = 0

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            self._stop.wait(self.interval)

    def __enter__(self):
        self.start = self.peak = self.process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)

    @property
    def delta(self) -> int:
        return max(0, self.peak - self.start)


def peak_memory_bytes(
    model: nn.Module,
    input_size: int,
    batch_size: int,
    device="cpu",
    bf16: bool = False,
    in_chans: int = 3,
) -> int:
    """Memory a forward pass of one batch needs beyond the model and its input."""
    device = torch.device(device)
    model = model.to(device).eval()
    x = _input(batch_size, in_chans, input_size, device)
    with torch.inference_mode(), autocast(device, "bf16" if bf16 else "fp32"):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            before = torch.cuda.memory_allocated(device)
            model(x)
            torch.cuda.synchronize(device)
            return int(torch.cuda.max_memory_allocated(device) - before)
        _release_free_heap()
        with _RssPeak() as rss:
            model(x)
        return int(rss.delta)


def efficiency_row(
    model: nn.Module,
    input_size: int,
    device="cpu",
    batch_sizes=(1, 32),
    repeats: int = 10,
    warmup: int = 3,
    bf16: bool = False,
    name: str | None = None,
) -> dict:
    """One row of the efficiency table for ``model`` at ``input_size`` on ``device``."""
    device = torch.device(device)
    row = {
        "detector": name or getattr(model, "name", "") or type(model).__name__,
        "input_size": int(input_size),
        "device": str(device),
        "dtype": "bf16" if bf16 else "fp32",
        "params": count_parameters(model),
        "gflops": flops_per_image(model, input_size, device) / 1e9,
    }
    row["repeats"] = int(repeats)
    for bs in batch_sizes:
        times = latency_samples(model, input_size, bs, device, repeats, warmup, bf16)
        seconds = statistics.median(times)
        row[f"latency_ms_bs{bs}"] = seconds * 1e3
        row[f"latency_iqr_ms_bs{bs}"] = _iqr(times) * 1e3
        row[f"images_per_s_bs{bs}"] = 1.0 / seconds
        row[f"peak_mem_mb_bs{bs}"] = peak_memory_bytes(model, input_size, bs, device, bf16) / 2**20
    return row


def checkpoint_efficiency(
    checkpoint: str | Path, name: str, device: str = "auto", batch_sizes=(1, 32), repeats: int = 10
) -> dict:
    """:func:`efficiency_row` of a trained network checkpoint at its own input size, run as
    inference runs it (channels_last and the checkpoint's precision on CUDA)."""
    dev = pick_device(device)
    model, meta = load_checkpoint(checkpoint, dev)
    model, precision = prepare_model(model, meta, dev)
    row = efficiency_row(
        model, meta["input_size"], dev, batch_sizes, repeats, bf16=precision == "bf16", name=name
    )
    row["arch"] = meta["arch"]
    return row
