"""Detector cost: parameters, FLOPs per image, latency per image and peak memory.

FLOPs are counted by ``torch.utils.flop_counter.FlopCounterMode`` on one image (a video
detector: one sequence of its ``frames`` frames) at the test resolution (multiply-adds count as 2 FLOPs; convolutions, matrix products and attention are
counted, element-wise ops, normalisation and pooling are not). Latency is timed the way
inference runs the model (:func:`fairforge.inference.prepare_model`: eval mode, on CUDA
channels_last inputs and the checkpoint's precision). Detectors are timed together, batch by
batch in turn (:func:`interleaved_latency`): a latency depends on what else the machine does at the
moment, and timed in separate jobs two copies of one MesoNet-4 read 2.98 and 9.40 ms on a busy
2-core machine. Per image (:func:`latency_summary`): the median over rounds of each round's
median, the 0.1 quantile of all timed batches (``latency_p10_ms_bs*``: other processes only
ever slow a batch down), the interquartile range of all timed batches
(``latency_iqr_ms_bs*``) and the rounds' spread; :func:`flag_same_architecture` checks that
rows of one computation agree within 20% on the 0.1 quantile. The workflow's ``efficiency``
job times every detector in one job that runs alone (all cores, and the ``timing`` resource
that the profiles cap at 1), with the torch threads of a prediction job. Peak
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
from contextlib import contextmanager
from pathlib import Path

import psutil
import torch
from torch import nn

from fairforge.columns import EFFICIENCY_BATCH_COLUMNS
from fairforge.inference import prepare_model
from fairforge.runtime import autocast, load_checkpoint, pick_device

#: same-architecture rows whose latencies differ by more than this share are flagged
AGREEMENT_TOLERANCE = 0.2
#: the quantile of all timed batches that ``latency_p10_ms_bs*`` reports and the
#: same-architecture check compares: the fast batches that other processes left alone
LOW_QUANTILE = 0.1
#: the latency (per batch size ``_bs*``) that :func:`flag_same_architecture` compares
AGREEMENT_COLUMN = "latency_p10_ms"


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
    # imported here: it pulls in triton, a second of start-up for every prediction job
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.inference_mode(), counter:
        model(x)
    return int(counter.get_total_flops())


def _input(batch_size, in_chans, input_size, device) -> torch.Tensor:
    x = torch.randn(batch_size, in_chans, input_size, input_size, device=device)
    return x.contiguous(memory_format=torch.channels_last) if device.type == "cuda" else x


def _timed(model, x, device, n: int, bf16: bool) -> list[float]:
    """Seconds of each of ``n`` forward passes of the batch ``x``."""
    times = []
    with torch.inference_mode(), autocast(device, "bf16" if bf16 else "fp32"):
        for _ in range(n):
            _sync(device)
            start = time.perf_counter()
            model(x)
            _sync(device)
            times.append(time.perf_counter() - start)
    return times


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
    _timed(model, x, device, warmup, bf16)
    return [t / batch_size for t in _timed(model, x, device, repeats, bf16)]


@contextmanager
def torch_threads(threads: int | None):
    """Run the block with ``threads`` torch threads (None: as they are), then restore them."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(max(1, int(threads)))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def interleaved_latency(
    models: dict[str, tuple[nn.Module, int, bool]],
    batch_size: int,
    device="cpu",
    rounds: int = 5,
    repeats: int = 10,
    warmup: int = 3,
    in_chans: int = 3,
    round_warmup: int = 1,
    threads: int | None = None,
) -> dict[str, list[list[float]]]:
    """Seconds per image of several detectors timed batch by batch in turn: ``models`` maps a
    name to (model, input size, bf16). After ``warmup`` batches each, every round starts with
    ``round_warmup`` untimed batches of each model (its weights back in the caches after the
    others ran) and then takes ``repeats`` steps; each step times one batch of every model,
    the order rotated by one each step, so that whatever else the machine does at the time
    falls on all of them alike. ``threads``: torch threads for the whole timing (None: as
    set). Returns, per name, the per-image times of each round."""
    device = torch.device(device)
    inputs = {}
    with torch_threads(threads):
        for name, (model, size, bf16) in models.items():
            model.to(device).eval()
            inputs[name] = _input(batch_size, in_chans, size, device)
            _timed(model, inputs[name], device, warmup, bf16)
        return _take_turns(models, inputs, device, batch_size, rounds, repeats, round_warmup)


def _take_turns(models, inputs, device, batch_size, rounds, repeats, round_warmup):
    names = list(models)
    out = {name: [[] for _ in range(rounds)] for name in names}
    step = 0
    for r in range(rounds):
        for name, (model, _, bf16) in models.items():
            _timed(model, inputs[name], device, round_warmup, bf16)
        for _ in range(repeats):
            k = step % len(names)
            for name in names[k:] + names[:k]:
                model, _, bf16 = models[name]
                (seconds,) = _timed(model, inputs[name], device, 1, bf16)
                out[name][r].append(seconds / batch_size)
            step += 1
    return out


def latency_per_image(*args, **kwargs) -> float:
    """Median seconds per image (:func:`latency_samples`)."""
    return statistics.median(latency_samples(*args, **kwargs))


def _iqr(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[2] - q[0]


def _quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values``, linear between order statistics (numpy's default)."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency_summary(per_round: list[list[float]]) -> dict[str, float]:
    """Seconds per image from the per-round times of :func:`interleaved_latency`:
    ``median``, the median of the round medians; ``p10``, the :data:`LOW_QUANTILE` of all
    timed batches (batches another process slowed down only ever take longer, so the low
    tail is the detector's own speed; a quantile rather than the minimum, so that one lucky
    batch does not decide); ``iqr``, the interquartile range of all batches; ``spread``,
    (max − min) / median of the round medians."""
    medians = [statistics.median(times) for times in per_round]
    every = [t for times in per_round for t in times]
    median = statistics.median(medians)
    return {
        "median": median,
        "p10": _quantile(every, LOW_QUANTILE),
        "iqr": _iqr(every),
        "spread": (max(medians) - min(medians)) / median,
    }


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


def _static_row(name, model, input_size, device, bf16) -> dict:
    return {
        "detector": name,
        "input_size": int(input_size),
        "device": str(device),
        "dtype": "bf16" if bf16 else "fp32",
        "threads": torch.get_num_threads(),
        "params": count_parameters(model),
        "gflops": flops_per_image(model, input_size, device) / 1e9,
    }


def efficiency_rows(
    models: dict[str, tuple[nn.Module, int, bool]],
    device="cpu",
    batch_sizes=(1, 32),
    rounds: int = 5,
    repeats: int = 10,
    warmup: int = 3,
    threads: int | None = None,
) -> list[dict]:
    """Efficiency-table rows of several detectors (name → (model, input size, bf16)), their
    latencies timed together (:func:`interleaved_latency`) with ``threads`` torch threads
    (None: as set) and summarised per image by :func:`latency_summary`: ``latency_ms_bs*``
    the median, ``latency_p10_ms_bs*`` the low quantile, ``latency_iqr_ms_bs*`` and
    ``latency_spread_bs*``."""
    device = torch.device(device)
    with torch_threads(threads):
        rows = {
            name: _static_row(name, model, size, device, bf16)
            | {"rounds": int(rounds), "repeats": int(repeats)}
            for name, (model, size, bf16) in models.items()
        }
        for bs in batch_sizes:
            timed = interleaved_latency(models, bs, device, rounds, repeats, warmup)
            for name, per_round in timed.items():
                summary = latency_summary(per_round)
                model, size, bf16 = models[name]
                measured = {
                    "latency_ms": summary["median"] * 1e3,
                    "latency_p10_ms": summary["p10"] * 1e3,
                    "latency_iqr_ms": summary["iqr"] * 1e3,
                    "latency_spread": summary["spread"],
                    "images_per_s": 1.0 / summary["median"],
                    "peak_mem_mb": peak_memory_bytes(model, size, bs, device, bf16) / 2**20,
                }
                rows[name] |= {f"{c}_bs{bs}": measured[c] for c in EFFICIENCY_BATCH_COLUMNS}
    return list(rows.values())


def efficiency_row(
    model: nn.Module,
    input_size: int,
    device="cpu",
    batch_sizes=(1, 32),
    repeats: int = 10,
    warmup: int = 3,
    bf16: bool = False,
    name: str | None = None,
    rounds: int = 1,
) -> dict:
    """One row of the efficiency table for ``model`` at ``input_size`` on ``device``."""
    name = name or getattr(model, "name", "") or type(model).__name__
    rows = efficiency_rows(
        {name: (model, input_size, bf16)}, device, batch_sizes, rounds, repeats, warmup
    )
    return rows[0]


def flag_same_architecture(
    rows: list[dict],
    batch_sizes=(1, 32),
    tolerance: float = AGREEMENT_TOLERANCE,
    column: str = AGREEMENT_COLUMN,
) -> list[dict]:
    """Check that detectors of one architecture (same ``arch``, input size, precision and
    device: the same computation) were timed alike: ``same_arch_ratio_bs*`` is the slowest
    over the fastest latency (``column``, by default the low quantile of the timed batches,
    which the load of other processes moves least) of the row's group, ``same_arch_agree``
    whether every ratio is within 1 + ``tolerance`` (None for a row alone in its group or
    without a network)."""
    key = ("arch", "input_size", "dtype", "device")
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if all(row.get(k) is not None for k in key) and f"{column}_bs{batch_sizes[0]}" in row:
            groups.setdefault(tuple(row[k] for k in key), []).append(row)
    for row in rows:
        row["same_arch_agree"] = None
    for members in groups.values():
        if len(members) < 2:
            continue
        ratios = {}
        for bs in batch_sizes:
            latencies = [m[f"{column}_bs{bs}"] for m in members]
            ratios[bs] = max(latencies) / min(latencies)
        for m in members:
            for bs, ratio in ratios.items():
                m[f"same_arch_ratio_bs{bs}"] = ratio
            m["same_arch_agree"] = all(r <= 1 + tolerance for r in ratios.values())
    return rows


def checkpoint_efficiency_rows(
    checkpoints: dict[str, str | Path],
    device: str = "auto",
    batch_sizes=(1, 32),
    rounds: int = 5,
    repeats: int = 10,
    threads: int | None = None,
) -> list[dict]:
    """:func:`efficiency_rows` of trained network checkpoints (name → path), each loaded
    once and run as inference runs it (its own input size; channels_last and the
    checkpoint's precision on CUDA; ``threads``: the torch threads of a prediction job, None:
    as set), timed together, with the same-architecture check."""
    dev = pick_device(device)
    models, arch = {}, {}
    for name, path in checkpoints.items():
        model, meta = load_checkpoint(path, dev)
        model, precision = prepare_model(model, meta, dev)
        models[name] = (model, meta["input_size"], precision == "bf16")
        arch[name] = meta["arch"]
    rows = efficiency_rows(models, dev, batch_sizes, rounds, repeats, threads=threads)
    for row in rows:
        row["arch"] = arch[row["detector"]]
    return flag_same_architecture(rows, batch_sizes)
