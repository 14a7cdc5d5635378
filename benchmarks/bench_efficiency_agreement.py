"""Do latency measurements of one architecture agree on a busy machine?

Two MesoNet-4 detectors at 64 px (the demo's ``meso4`` and ``meso4_sdaug``: the same network,
different weights) are timed the way the efficiency table used to (each detector on its own,
warm-up then repeats, one after the other: separate jobs at separate moments) and the way it
does now (:func:`fairforge.efficiency.efficiency_rows`: one batch of each in turn, the order
rotating, the median of the round medians). Meanwhile a background process switches a CPU-bound load on
and off at random moments (seeded), like the other jobs and users of a shared machine; the
machine's own other load comes on top. Each trial gives the slower/faster latency ratio of
the two detectors; the table shows its median and worst case over the trials and how many
trials agree within 20% (the efficiency table's ``same_arch_agree``).

    python benchmarks/bench_efficiency_agreement.py --trials 8 --threads 2
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import statistics
import time

import torch

from fairforge.detectors import create_detector
from fairforge.efficiency import AGREEMENT_TOLERANCE, interleaved_latency, latency_samples


def _background_load(stop, seed: int) -> None:
    """Busy for 0.05-0.6 s, idle for 0.05-0.6 s, until ``stop`` is set."""
    rng = random.Random(seed)
    while not stop.is_set():
        end = time.perf_counter() + rng.uniform(0.05, 0.6)
        x = 0
        while time.perf_counter() < end:
            x += 1
        stop.wait(rng.uniform(0.05, 0.6))


def _separate(models, bs, repeats, warmup) -> dict[str, float]:
    return {
        name: statistics.median(latency_samples(m, size, bs, "cpu", repeats, warmup))
        for name, (m, size, _) in models.items()
    }


def _together(models, bs, rounds, repeats, warmup) -> dict[str, float]:
    """The efficiency table's latency (:func:`fairforge.efficiency.efficiency_rows`): the
    median of the round medians of :func:`interleaved_latency`."""
    timed = interleaved_latency(models, bs, "cpu", rounds, repeats, warmup)
    return {
        name: statistics.median(statistics.median(times) for times in per_round)
        for name, per_round in timed.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--load", type=int, default=1, help="background load processes")
    parser.add_argument("--batch-sizes", default="1,32")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    models = {
        name: (create_detector("meso4", input_size=args.size).eval(), args.size, False)
        for name in ("meso4", "meso4_sdaug")
    }
    stop = mp.Event()
    loads = [mp.Process(target=_background_load, args=(stop, i)) for i in range(args.load)]
    for p in loads:
        p.start()
    try:
        results = {}
        for bs in (int(b) for b in args.batch_sizes.split(",")):
            for method in ("separate", "together"):
                ratios, example = [], None
                start = time.perf_counter()
                for _ in range(args.trials):
                    if method == "separate":
                        lat = _separate(models, bs, args.repeats, 3)
                    else:
                        lat = _together(models, bs, args.rounds, args.repeats, 3)
                    ratios.append(max(lat.values()) / min(lat.values()))
                    example = example or lat
                seconds = (time.perf_counter() - start) / args.trials
                results[(bs, method)] = (ratios, example, seconds)
                print(f"batch {bs}, {method}: ratios {[round(r, 3) for r in ratios]}", flush=True)
    finally:
        stop.set()
        for p in loads:
            p.join()
    print(
        f"MesoNet-4 x 2 at {args.size} px, {args.threads} threads, {args.load} background "
        f"load process(es), {args.trials} trials; together = {args.rounds} rounds x "
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
            f"| {within}/{len(ratios)} | {ms} | {seconds:.1f} |"
        )


if __name__ == "__main__":
    main()
