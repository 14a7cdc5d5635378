"""Efficiency measurements: parameter and FLOP counts against hand counts, latency per image,
peak memory."""

import time

import pytest
import torch
from torch import nn

from fairforge.detectors import create_detector
from fairforge.efficiency import (
    count_parameters,
    efficiency_row,
    flops_per_image,
    latency_per_image,
    peak_memory_bytes,
)


def _conv_flops(cin, cout, k, h, w):
    return 2 * cout * h * w * cin * k * k


def test_flops_of_a_single_conv_are_analytic():
    conv = nn.Conv2d(3, 8, 3, padding=1)
    assert flops_per_image(conv, 16) == _conv_flops(3, 8, 3, 16, 16)
    assert flops_per_image(nn.Conv2d(3, 4, 5, stride=2, padding=2), 32) == _conv_flops(
        3, 4, 5, 16, 16
    )


def test_meso4_flops_and_parameters_match_a_hand_count():
    model = create_detector("meso4", input_size=64)
    # convs at 64, 32, 16, 8 px; then 16·2·2 → 16 → 1 linear layers
    expected = (
        _conv_flops(3, 8, 3, 64, 64)
        + _conv_flops(8, 8, 5, 32, 32)
        + _conv_flops(8, 16, 5, 16, 16)
        + _conv_flops(16, 16, 5, 8, 8)
        + 2 * 64 * 16
        + 2 * 16 * 1
    )
    assert flops_per_image(model, 64) == expected
    convs = 3 * 8 * 9 + 8 * 8 * 25 + 8 * 16 * 25 + 16 * 16 * 25
    bns = 2 * (8 + 8 + 16 + 16)
    linears = 64 * 16 + 16 + 16 + 1
    assert count_parameters(model) == convs + bns + linears


class _Sleeper(nn.Module):
    """A model whose batch takes a known wall time whatever its size."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        time.sleep(self.seconds)
        return x.mean(dim=(1, 2, 3))


def test_latency_is_per_image_after_warmup():
    model = _Sleeper(0.02)
    one = latency_per_image(model, 8, batch_size=1, repeats=3, warmup=2)
    assert model.calls == 5
    four = latency_per_image(model, 8, batch_size=4, repeats=3, warmup=0)
    assert 0.02 <= one < 0.2
    assert 0.005 <= four < 0.05


class _Allocator(nn.Module):
    """Holds a 64 MiB buffer for a while during the forward pass."""

    def forward(self, x):
        buf = torch.ones(16 * 2**20)
        time.sleep(0.05)
        return x.mean(dim=(1, 2, 3)) + buf[0]


def test_peak_memory_sees_a_large_temporary_allocation():
    assert peak_memory_bytes(_Allocator(), 8, batch_size=1) >= 48 * 2**20


def test_efficiency_row_for_meso4():
    model = create_detector("meso4", input_size=32)
    row = efficiency_row(model, 32, "cpu", batch_sizes=(1, 4), repeats=2, warmup=1)
    assert row["detector"] == "meso4" and row["input_size"] == 32 and row["device"] == "cpu"
    assert row["params"] == count_parameters(model)
    assert row["gflops"] == pytest.approx(flops_per_image(model, 32) / 1e9)
    for bs in (1, 4):
        assert row[f"latency_ms_bs{bs}"] > 0
        assert row[f"images_per_s_bs{bs}"] == pytest.approx(1e3 / row[f"latency_ms_bs{bs}"])
        assert row[f"peak_mem_mb_bs{bs}"] >= 0


def test_efficiency_row_gives_the_spread_of_its_repeats():
    from fairforge.detectors import create_detector

    row = efficiency_row(create_detector("meso4", input_size=32), 32, "cpu", (1,), repeats=5)
    assert row["repeats"] == 5
    assert 0 <= row["latency_iqr_ms_bs1"] < 10 * row["latency_ms_bs1"]


def test_the_loader_queue_fits_in_the_job_memory():
    from fairforge.inference import QUEUE_MEMORY_SHARE, bounded_loader

    # the case: 8 workers x prefetch 4 x batch 256 at 380 px is ~14 GB of floats
    image = 3 * 380 * 380 * 4
    b, w, p = bounded_loader(256, 8, 380, memory_mb=16000)
    assert (w * p + 2) * b * image <= QUEUE_MEMORY_SHARE * 16000 * 2**20
    assert (b, w, p) != (256, 8, 4) and b >= 1 and w >= 1
    assert bounded_loader(64, 2, 64, memory_mb=16000) == (64, 2, 4)  # fits: unchanged
    assert bounded_loader(64, 0, 64, memory_mb=None) == (64, 0, 0)
