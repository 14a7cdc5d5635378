"""Coverage of the test-inversion intervals in a stylized model, in seconds per setting.

The cells of a detector are known accuracies (F, S) plus normal sampling error (sd ``sigma``
per cell, correlated across the approaches of a group as a subject effect makes them); the
resampling error is drawn from the same normal model instead of a subject bootstrap. So each
candidate construction of ``invert_on_cells`` can be compared on many data sets quickly,
before ``bench_coverage.py`` measures it on simulated subjects. Usage::

    python benchmarks/bench_coverage_stylized.py [--runs 400] [--boot 300] [--sigma 0.015]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from fairforge.metrics.fairness import NOT_GAPS, metrics_from_cell_counts
from fairforge.metrics.inversion import invert_on_cells
from fairforge.seeding import rng_for

BASE = np.array([0.85, 0.75, 0.65])
PATTERNS = {
    "mixed": np.array([[-1.5, -0.5, 0.5, 1.5], [1.0, -1.0, 0.5, -0.5], [-0.5, 1.5, -1.5, 0.5]]),
    "spaced": np.array([[-1.5, -0.5, 0.5, 1.5], [1.5, -0.5, 0.5, -1.5], [1.5, 0.5, -0.5, -1.5]]),
}
CORR = 0.33  # correlation of a group's cells across approaches (the shared subject effect)


def draw(rng, size, shape, sigma):
    common = rng.normal(0.0, 1.0, (size, 1, shape[1]))
    own = rng.normal(0.0, 1.0, (size, *shape))
    return sigma * (np.sqrt(CORR) * common + np.sqrt(1 - CORR) * own)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--boot", type=int, default=300)
    ap.add_argument("--sigmas", type=float, nargs="+", default=[0.048, 0.015, 0.0053])
    ap.add_argument("--gaps", type=float, nargs="+", default=[0.15])
    ap.add_argument("--pattern", default="mixed")
    ap.add_argument("--variants", nargs="+", default=["adaptive", "perturbed", "observed"])
    ap.add_argument("--metrics", nargs="+", default=None)
    args = ap.parse_args(argv)
    variants = {v: {"nuisance": v} for v in args.variants}
    rows = []
    start = time.perf_counter()
    for gap in args.gaps:
        truth_cells = BASE[:, None] + gap * PATTERNS[args.pattern] / 3.0
        total = np.ones_like(truth_cells)
        truth = {
            k: float(v)
            for k, v in metrics_from_cell_counts(truth_cells, total, 0).items()
            if k not in NOT_GAPS
        }
        names = args.metrics or list(truth)
        for sigma in args.sigmas:
            hit = {(v, k): [0, 0] for v in variants for k in names}
            for run in range(args.runs):
                rng = rng_for("stylized", gap, sigma, run)
                acc = truth_cells + draw(rng, 1, truth_cells.shape, sigma)[0]
                noise = draw(rng, args.boot, truth_cells.shape, sigma)
                for v, kw in variants.items():
                    ci = invert_on_cells(acc, total, 0, noise, **kw)
                    for k in names:
                        lo, hi = ci[k]
                        hit[v, k][0] += lo <= truth[k] <= hi
                        hit[v, k][1] += truth[k] < lo
            for (v, k), (h, b) in hit.items():
                rows.append(
                    {
                        "gap": gap,
                        "sigma": sigma,
                        "variant": v,
                        "metric": k,
                        "coverage": h / args.runs,
                        "above": b / args.runs,
                    }
                )
            print(f"gap {gap} sigma {sigma}: {time.perf_counter() - start:.0f} s", flush=True)
    table = pd.DataFrame(rows)
    pd.set_option("display.width", 250)
    wide = table.pivot_table(
        index="metric", columns=["sigma", "variant"], values="coverage", sort=False
    )
    print(wide.round(3).to_string())
    wide = table.pivot_table(
        index="metric", columns=["sigma", "variant"], values="above", sort=False
    )
    print("truth below the interval")
    print(wide.round(3).to_string())
    summ = table.groupby(["sigma", "variant"])["coverage"].agg(["min", "mean", "max"])
    print(summ.round(3).to_string())
    return table


if __name__ == "__main__":
    main()
