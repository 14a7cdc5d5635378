"""Do latency measurements of one architecture agree on a busy machine?

Two MesoNet-4 detectors at 64 px (the demo's ``meso4`` and ``meso4_sdaug``: the same network,
different weights) are timed in up to three ways:

``separate``
    each detector on its own, warm-up then repeats, one after the other (separate jobs at
    separate moments), the median batch;
``before``
    batch by batch in turn, the order rotating each step, no warm-up between rounds, with
    ``--before-threads`` torch threads (the local efficiency job's: every core), the median
    of the round medians (the efficiency table until the low quantile);
``after``
    what the efficiency job does now (:func:`fairforge.efficiency.efficiency_rows`): the
    same turns with a warm-up batch of each detector before every round, with ``--threads``
    torch threads (a local prediction job's: 1), compared on
    :data:`~fairforge.efficiency.LOW_QUANTILE` of all timed batches (``latency_p10_ms``).

Other processes compete at normal priority: ``--load N`` busy loops that never pause (N
processes each wanting a whole core) and ``--bursty N`` processes that switch a CPU-bound load
on and off at random moments (seeded); the machine's own other load comes on top, so quote
the load average with the result. Each trial gives the slower/faster latency ratio of the
two detectors; the table shows its median and worst case over the trials and how many
trials agree within 20% (the efficiency table's ``same_arch_agree``). Trials of the methods
alternate, so that all meet the same load.

    python benchmarks/bench_efficiency_agreement.py --trials 6 --load 4
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import statistics
import time

import torch

from fairforge.detectors import create_detector
from fairforge.efficiency import (
    AGREEMENT_TOLERANCE,
    interleaved_latency,
    latency_samples,
    latency_summary,
)


def _busy_loop(stop) -> None:
    """Busy until ``stop`` is set."""
    x = 0
    while not stop.is_set():
        for _ in range(10_000):
            x += 1


def _bursty_load(stop, seed: int) -> None:
    """Busy for 0.05-0.6 s, idle for 0.05-0.6 s, until ``stop`` is set."""
    rng = random.Random(seed)
    while not stop.is_set():
        end = time.perf_counter() + rng.uniform(0.05, 0.6)
        x = 0
        while time.perf_counter() < end:
            x += 1
        stop.wait(rng.uniform(0.05, 0.6))


def _separate(models, bs, args) -> dict[str, float]:
    return {
        name: statistics.median(latency_samples(m, size, bs, "cpu", args.repeats, 3))
        for name, (m, size, _) in models.items()
    }


def _before(models, bs, args) -> dict[str, float]:
    """Turns without a warm-up per round, the median of the round medians."""
    timed = interleaved_latency(
        models, bs, "cpu", args.rounds, args.repeats, 3, round_warmup=0, threads=args.before_threads
    )
    return {name: latency_summary(per_round)["median"] for name, per_round in timed.items()}


def _after(models, bs, args) -> dict[str, float]:
    """The efficiency table's turns and the low quantile its same-architecture check compares."""
    timed = interleaved_latency(
        models, bs, "cpu", args.rounds, args.repeats, 3, threads=args.threads
    )
    return {name: latency_summary(per_round)["p10"] for name, per_round in timed.items()}


METHODS = {"separate": _separate, "before": _before, "after": _after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of after, separate")
    parser.add_argument("--before-threads", type=int, default=2, help="torch threads of before")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--load", type=int, default=0, help="busy-loop processes")
    parser.add_argument("--bursty", type=int, default=0, help="on/off load processes")
    parser.add_argument("--batch-sizes", default="1,32")
    parser.add_argument("--methods", default="before,after", help=f"of {','.join(METHODS)}")
    args = parser.parse_args()
    methods = args.methods.split(",")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    models = {
        name: (create_detector("meso4", input_size=args.size).eval(), args.size, False)
        for name in ("meso4", "meso4_sdaug")
    }
    stop = mp.Event()
    loads = [mp.Process(target=_busy_loop, args=(stop,)) for _ in range(args.load)]
    loads += [mp.Process(target=_bursty_load, args=(stop, i)) for i in range(args.bursty)]
    for p in loads:
        p.start()
    results = {}
    try:
        for bs in (int(b) for b in args.batch_sizes.split(",")):
            for method in methods:
                results[(bs, method)] = ([], None, 0.0)
            for _ in range(args.trials):
                for method in methods:
                    ratios, example, seconds = results[(bs, method)]
                    start = time.perf_counter()
                    lat = METHODS[method](models, bs, args)
                    ratios.append(max(lat.values()) / min(lat.values()))
                    seconds += time.perf_counter() - start
                    results[(bs, method)] = (ratios, example or lat, seconds)
            for method in methods:
                ratios = results[(bs, method)][0]
                print(f"batch {bs}, {method}: ratios {[round(r, 3) for r in ratios]}", flush=True)
    finally:
        stop.set()
        for p in loads:
            p.join()
    print(
        f"MesoNet-4 x 2 at {args.size} px, {args.threads} threads ({args.before_threads} before), "
        f"{args.load} busy-loop and "
        f"{args.bursty} bursty load process(es), load average at the end "
        f"{os.getloadavg()[0]:.1f}, {args.trials} trials; turns = {args.rounds} rounds x "
        f"{args.repeats} repeats\n"
    )
    print("| batch | method | ratio median | ratio worst | within 20% | ms/image (first trial) "
          "| s per trial |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for (bs, method), (ratios, example, seconds) in results.items():
        within = sum(r <= 1 + AGREEMENT_TOLERANCE for r in ratios)
        ms = ", ".join(f"{v * 1e3:.2f}" for v in example.values())
        print(
            f"| {bs} | {method} | {statistics.median(ratios):.3f} | {max(ratios):.3f} "
            f"| {within}/{len(ratios)} | {ms} | {seconds / len(ratios):.1f} |"
        )


if __name__ == "__main__":
    main()
