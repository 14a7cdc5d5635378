"""Coverage of the subject-bootstrap intervals against known population values.

Simulated detectors: 4 groups, the approaches ``real`` and two forgery methods, per-(approach,
group) accuracies with a chosen gap between groups, and a subject-level random effect (each
subject's logit accuracy is shifted by u ~ N(0, sigma), the same shift on all its samples,
so samples of one subject are correlated as FairFD observed). The population value of each
cell is E_u[expit(logit p + u)] (Gauss-Hermite quadrature), and the true value of every
metric is the metric of the population cells. For each setting (gap x subjects per group),
``--runs`` data sets are drawn; for each, the reported interval (test inversion,
``inverted_intervals``), the basic bootstrap interval floored at 0 and the plain percentile
interval are computed from one set of subject resamples, and the share of runs whose
interval holds the true value is printed per metric. Usage::

    python benchmarks/bench_coverage.py [--runs 400] [--boot 1000] [--sizes 30 300 2500]

Settings can run in separate processes (``--gaps 0 --out a.csv``, ...) and their tables be
printed together with ``--show a.csv b.csv ...``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from fairforge.metrics.fairness import metrics_from_cell_counts
from fairforge.metrics.uncertainty import (
    NOT_GAPS,
    SubjectStats,
    basic_interval,
    bootstrap_noise,
    inverted_intervals,
    point_estimates,
)
from fairforge.seeding import rng_for

GROUPS = ("g0", "g1", "g2", "g3")
APPROACHES = ("real", "fake1", "fake2")
BASE = np.array([0.85, 0.75, 0.65])  # per approach, the accuracy of the middle group
SHAPE = np.array([[-1.5, -0.5, 0.5, 1.5], [1.0, -1.0, 0.5, -0.5], [-0.5, 1.5, -1.5, 0.5]])
INTERVALS = {
    "coverage": "the reported 95% interval (test inversion along the gap pattern)",
    "coverage_basic": "the basic bootstrap interval, floored at 0",
    "coverage_percentile": "the plain 95% percentile interval",
}


def cell_accuracy(gap: float) -> np.ndarray:
    """(F, S) accuracies: each approach spreads its groups over ``gap`` (its range)."""
    return BASE[:, None] + gap * SHAPE / 3.0


def population_cells(p: np.ndarray, sigma: float) -> np.ndarray:
    """E_u[expit(logit p + u)], u ~ N(0, sigma): the accuracy of a cell in the population."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    weights = weights / weights.sum()
    return (expit(logit(p)[..., None] + sigma * nodes) * weights).sum(axis=-1)


def simulate(p: np.ndarray, n_per_group: int, per_cell: int, sigma: float, rng) -> SubjectStats:
    n_f, n_s = p.shape
    group = np.repeat(np.arange(n_s), n_per_group)
    u = rng.normal(0.0, sigma, group.size)
    prob = expit(logit(p.T[group]) + u[:, None])  # (N, F)
    total = np.full(prob.shape, float(per_cell))
    correct = rng.binomial(per_cell, prob).astype(np.float64)
    ids = np.array([f"s{i}" for i in range(group.size)], dtype=object)
    return SubjectStats(ids, group, GROUPS, APPROACHES, 0, correct, total)


def intervals(stats: SubjectStats, n_boot: int, seed: int) -> dict[str, dict[str, tuple]]:
    """Per gap metric, the three intervals of one data set."""
    estimate = point_estimates(stats)
    reps, noise = bootstrap_noise(stats, n_boot, seed)
    inverted = inverted_intervals(stats, noise)
    out = {}
    for k, interval in inverted.items():
        valid = reps[k][np.isfinite(reps[k])]
        pct = tuple(np.quantile(valid, [0.025, 0.975])) if valid.size else (np.nan, np.nan)
        out[k] = {
            "coverage": interval,
            "coverage_basic": basic_interval(estimate[k], reps[k], floor=0.0),
            "coverage_percentile": pct,
        }
    return out


def show(table: pd.DataFrame) -> None:
    pd.set_option("display.width", 200)
    for column, title in INTERVALS.items():
        wide = table.pivot_table(
            index="metric", columns=["gap", "subjects_per_group"], values=column, sort=False
        )
        print(f"coverage of {title} (rows: metric; columns: gap, subjects per group)")
        print(wide.round(3).to_string())
    runs = table["runs"]
    worst = table.loc[table["gap"] > 0, "coverage"]
    print(
        f"runs per cell {runs.min()}-{runs.max()}; Monte Carlo standard error at 0.95: "
        f"{np.sqrt(0.95 * 0.05 / runs.min()):.3f}; reported interval, non-zero gaps: "
        f"{worst.min():.3f}-{worst.max():.3f}"
    )


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[30, 300, 2500])
    ap.add_argument("--gaps", type=float, nargs="+", default=[0.0, 0.05, 0.15])
    ap.add_argument("--per-cell", type=int, default=4, help="samples per subject and approach")
    ap.add_argument("--sigma", type=float, default=0.8, help="sd of the subject logit effect")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="also write the long table (csv) here")
    ap.add_argument("--show", nargs="+", help="print the tables of these csv files and stop")
    args = ap.parse_args(argv)
    if args.show:
        table = pd.concat([pd.read_csv(f) for f in args.show], ignore_index=True)
        show(table)
        return table

    rows = []
    start = time.perf_counter()
    for gap in args.gaps:
        p = cell_accuracy(gap)
        pop = population_cells(p, args.sigma)
        truth = {
            k: float(v)
            for k, v in metrics_from_cell_counts(pop, np.ones_like(pop), 0).items()
            if k not in NOT_GAPS
        }
        for n in args.sizes:
            hits = {k: dict.fromkeys([*INTERVALS, "runs"], 0) for k in truth}
            for run in range(args.runs):
                rng = rng_for(args.seed, "bench_coverage", gap, n, run)
                stats = simulate(p, n, args.per_cell, args.sigma, rng)
                for k, found in intervals(stats, args.boot, run).items():
                    if not np.isfinite(found["coverage"][0]):
                        continue
                    t, tol = truth[k], 1e-9
                    for name, (low, high) in found.items():
                        hits[k][name] += low - tol <= t <= high + tol
                    hits[k]["runs"] += 1
            for k, h in hits.items():
                valid = h["runs"]
                rows.append(
                    {"gap": gap, "subjects_per_group": n, "metric": k, "true_value": truth[k]}
                    | {c: h[c] / valid if valid else np.nan for c in INTERVALS}
                    | {"runs": valid}
                )
            print(f"gap {gap} n {n}: {time.perf_counter() - start:.0f} s", flush=True)
    table = pd.DataFrame(rows)
    if args.out:
        table.to_csv(args.out, index=False)
    show(table)
    print(
        json.dumps({"runs": args.runs, "boot": args.boot, "seconds": time.perf_counter() - start})
    )
    return table


if __name__ == "__main__":
    main()
