"""Ranking speed: vectorised ``rank_gallery`` against a straightforward per-probe loop.

100k probes against 10k gallery identities (random unit vectors, dim 128) by default. The
vectorised ranking runs on every probe; the loop (one dot product per probe, a full sort,
keep k) runs on a subset and its time is extrapolated linearly to all probes, which is
stated in the output. The loop's rankings are checked against the vectorised ones on that
subset. Usage::

    python benchmarks/bench_ranking.py [--probes 100000] [--gallery 10000] [--loop-probes 1000]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from fairforge.metrics import exposure as xm
from fairforge.metrics.exposure import rank_gallery
from fairforge.seeding import rng_for


def unit_vectors(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.standard_normal((n, dim), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def rank_loop(probes: np.ndarray, gallery: np.ndarray, k: int) -> np.ndarray:
    out = np.empty((len(probes), k), dtype=np.int64)
    for i, p in enumerate(probes):
        out[i] = np.argsort(-(gallery @ p), kind="stable")[:k]
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probes", type=int, default=100_000)
    ap.add_argument("--gallery", type=int, default=10_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--loop-probes", type=int, default=1_000)
    ap.add_argument("--batch-size", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    probes = unit_vectors(rng_for(args.seed, "bench", "probes"), args.probes, args.dim)
    gallery = unit_vectors(rng_for(args.seed, "bench", "gallery"), args.gallery, args.dim)

    start = time.perf_counter()
    ranked, _ = rank_gallery(probes, gallery, args.k, batch_size=args.batch_size)
    vectorised_s = time.perf_counter() - start

    subset = min(args.loop_probes, args.probes)
    start = time.perf_counter()
    looped = rank_loop(probes[:subset], gallery, args.k)
    loop_subset_s = time.perf_counter() - start
    loop_all_s = loop_subset_s * args.probes / subset
    agree = float((looped == ranked[:subset]).all(axis=1).mean())

    # the metrics over every ranking, both counting conventions (probe i is identity i mod G)
    groups = ["g0", "g1", "g2", "g3"]
    gallery_groups = np.array(groups, dtype=object)[np.arange(args.gallery) % 4]
    probe_identity = np.arange(args.probes) % args.gallery
    start = time.perf_counter()
    for convention in xm.CONVENTIONS:
        for fn in (xm.per_ranking_visibility, xm.per_ranking_exposure):
            per = fn(ranked, gallery_groups, groups, args.k, probe_identity, convention, np.nan)
            xm.conditional_means(per)
    metrics_s = time.perf_counter() - start

    report = {
        "probes": args.probes,
        "gallery": args.gallery,
        "dim": args.dim,
        "k": args.k,
        "vectorised_s": round(vectorised_s, 3),
        "loop_subset_probes": subset,
        "loop_subset_s": round(loop_subset_s, 3),
        "loop_extrapolated_s": round(loop_all_s, 1),
        "speedup": round(loop_all_s / vectorised_s, 1),
        "rankings_identical_on_subset": agree,
        "metrics_both_conventions_s": round(metrics_s, 3),
    }
    print(
        f"vectorised rank_gallery: {vectorised_s:.2f} s for {args.probes} probes x "
        f"{args.gallery} gallery (dim {args.dim}, k {args.k})"
    )
    print(
        f"per-probe loop: {loop_subset_s:.2f} s for {subset} probes, extrapolated linearly "
        f"to {loop_all_s:.1f} s for {args.probes}"
    )
    print(
        f"speedup: {loop_all_s / vectorised_s:.1f}x; identical rankings on the subset: {agree:.3f}"
    )
    print(
        f"visibility + exposure (+ conditional means), both conventions, all rankings: "
        f"{metrics_s:.2f} s"
    )
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
