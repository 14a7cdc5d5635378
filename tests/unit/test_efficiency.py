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
    efficiency_rows,
    flag_same_architecture,
    flops_per_image,
    interleaved_latency,
    latency_per_image,
    latency_summary,
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


class _Counting(nn.Module):
    """A tiny network that records the order in which it is run."""

    def __init__(self, name, log):
        super().__init__()
        self.conv, self.name, self.log = nn.Conv2d(3, 2, 3), name, log

    def forward(self, x):
        self.log.append(self.name)
        return self.conv(x)


def test_interleaved_latency_takes_turns_and_rotates_the_order():
    log = []
    models = {n: (_Counting(n, log), 8, False) for n in ("a", "b", "c")}
    out = interleaved_latency(models, 1, rounds=2, repeats=3, warmup=1)
    assert {n: [len(r) for r in rounds] for n, rounds in out.items()} == {n: [3, 3] for n in "abc"}
    assert log[:3] == ["a", "b", "c"]  # one warm-up batch each
    rounds = [log[3:15], log[15:27]]  # then each round: one warm-up batch each, 3 steps
    for r in rounds:
        assert r[:3] == ["a", "b", "c"]
    steps = [r[3 + 3 * i : 6 + 3 * i] for r in rounds for i in range(3)]
    assert steps[:4] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
    assert len(log) == 27


def test_interleaved_latency_times_with_the_threads_it_is_given():
    seen = []

    class _Threads(nn.Module):
        def forward(self, x):
            seen.append(torch.get_num_threads())
            return x.mean()

    before = torch.get_num_threads()
    interleaved_latency({"t": (_Threads(), 4, False)}, 1, rounds=1, repeats=2, warmup=1,
                        round_warmup=0, threads=1)  # fmt: skip
    assert seen == [1, 1, 1]
    assert torch.get_num_threads() == before  # restored afterwards


def test_latency_summary_takes_the_low_quantile_of_every_batch():
    # two rounds; one batch of the second slowed down tenfold by another process
    per_round = [[1.0, 2.0, 3.0, 4.0, 5.0], [1.5, 2.5, 3.5, 4.5, 50.0]]
    summary = latency_summary(per_round)
    assert summary["median"] == pytest.approx((3.0 + 3.5) / 2)
    # sorted: 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 50 -> the 0.1 quantile sits at 0.9 of the way
    assert summary["p10"] == pytest.approx(1.0 + 0.9 * 0.5)
    assert summary["spread"] == pytest.approx(0.5 / 3.25)
    assert latency_summary([[2.0]])["p10"] == 2.0 and latency_summary([[2.0]])["iqr"] == 0.0


def test_rows_timed_together_report_rounds_and_spread():
    a, b = create_detector("meso4", input_size=32), create_detector("meso4", input_size=32)
    rows = efficiency_rows(
        {"a": (a, 32, False), "b": (b, 32, False)}, "cpu", (1,), rounds=3, repeats=2
    )
    for row in rows:
        assert row["rounds"] == 3 and row["repeats"] == 2 and row["threads"] >= 1
        assert row["latency_ms_bs1"] > 0 and row["latency_spread_bs1"] >= 0
        assert 0 < row["latency_p10_ms_bs1"] <= row["latency_ms_bs1"]
        assert row["latency_iqr_ms_bs1"] >= 0


def test_same_architecture_rows_that_disagree_are_flagged():
    def row(name, arch, ms, size=64):
        return {"detector": name, "arch": arch, "input_size": size, "dtype": "fp32",
                "device": "cpu", "latency_p10_ms_bs1": ms, "latency_p10_ms_bs32": ms / 4}  # fmt: skip

    rows = flag_same_architecture(
        [
            row("meso4", "meso4", 2.98),
            row("meso4_sdaug", "meso4", 9.40),
            row("x", "xception", 5.0),
            row("m2", "meso4", 3.1, size=128),
            row("m3", "meso4", 3.2, size=128),
        ]  # fmt: skip
    )
    by = {r["detector"]: r for r in rows}
    assert by["meso4"]["same_arch_agree"] is False and by["meso4_sdaug"]["same_arch_agree"] is False
    assert by["meso4"]["same_arch_ratio_bs1"] == pytest.approx(9.40 / 2.98)
    assert by["x"]["same_arch_agree"] is None  # alone: nothing to compare
    assert by["m2"]["same_arch_agree"] is True  # another input size is another computation
    assert by["m2"]["same_arch_ratio_bs32"] == pytest.approx(3.2 / 3.1)


def test_the_check_compares_the_low_quantile_not_the_median():
    # the median of one was stretched by another process; their undisturbed batches agree
    rows = [
        {
            "detector": d,
            "arch": "meso4",
            "input_size": 64,
            "dtype": "fp32",
            "device": "cpu",
            "latency_ms_bs1": ms,
            "latency_p10_ms_bs1": p10,
        }  # fmt: skip
        for d, ms, p10 in (("a", 2.9, 2.1), ("b", 9.4, 2.2))
    ]
    flagged = flag_same_architecture(rows, batch_sizes=(1,))
    assert [r["same_arch_agree"] for r in flagged] == [True, True]
    assert flagged[0]["same_arch_ratio_bs1"] == pytest.approx(2.2 / 2.1)
    by_median = flag_same_architecture(rows, batch_sizes=(1,), column="latency_ms")
    assert by_median[0]["same_arch_agree"] is False


def test_rows_write_the_batch_columns_in_the_contract_order():
    from fairforge.columns import EFFICIENCY_BATCH_COLUMNS

    (row,) = efficiency_rows(
        {"m": (create_detector("meso4", input_size=32), 32, False)}, "cpu", (1, 2), 1, 2, 1
    )
    measured = [c for c in row if c.endswith(("_bs1", "_bs2"))]
    assert measured == [f"{c}_bs{b}" for b in (1, 2) for c in EFFICIENCY_BATCH_COLUMNS]
