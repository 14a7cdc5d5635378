"""Coverage of the subject-bootstrap intervals against known population values.

Simulated detectors: 4 groups, the approaches ``real`` and two forgery methods, per-(approach,
group) accuracies with a chosen gap between groups, and a subject-level random effect (each
subject's logit accuracy is shifted by u ~ N(0, sigma), the same shift on all its samples,
so samples of one subject are correlated as FairFD observed). The population value of each
cell is E_u[expit(logit p + u)] (Gauss-Hermite quadrature), and the true value of every
metric is the metric of the population cells. For each setting (gap x subjects per group),
``--runs`` data sets are drawn; for each, the reported interval (basic bootstrap), the BCa
interval and the plain percentile interval are computed, and the share of runs whose
interval holds the true value is printed per metric. Usage::

    python benchmarks/bench_coverage.py [--runs 200] [--boot 1000] [--sizes 30 300 2500]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from fairforge.metrics.fairness import metrics_from_cell_counts
from fairforge.metrics.uncertainty import NOT_GAPS, SubjectStats, bootstrap_intervals
from fairforge.seeding import rng_for

GROUPS = ("g0", "g1", "g2", "g3")
APPROACHES = ("real", "fake1", "fake2")
BASE = np.array([0.85, 0.75, 0.65])  # per approach, the accuracy of the middle group
SHAPE = np.array([[-1.5, -0.5, 0.5, 1.5], [1.0, -1.0, 0.5, -0.5], [-0.5, 1.5, -1.5, 0.5]])


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


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[30, 300, 2500])
    ap.add_argument("--gaps", type=float, nargs="+", default=[0.0, 0.05, 0.15])
    ap.add_argument("--per-cell", type=int, default=4, help="samples per subject and approach")
    ap.add_argument("--sigma", type=float, default=0.8, help="sd of the subject logit effect")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="also write the long table (csv) here")
    args = ap.parse_args(argv)

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
            hits = {k: [0, 0, 0, 0] for k in truth}  # reported, BCa, percentile, valid runs
            for run in range(args.runs):
                rng = rng_for(args.seed, "bench_coverage", gap, n, run)
                stats = simulate(p, n, args.per_cell, args.sigma, rng)
                ci = bootstrap_intervals(stats, args.boot, seed=run)
                for k, t in truth.items():
                    row = ci.loc[k]
                    if not np.isfinite(row["ci_low"]):
                        continue
                    tol = 1e-9
                    hits[k][0] += row["ci_low"] - tol <= t <= row["ci_high"] + tol
                    hits[k][1] += row["bca_low"] - tol <= t <= row["bca_high"] + tol
                    hits[k][2] += row["pct_low"] - tol <= t <= row["pct_high"] + tol
                    hits[k][3] += 1
            for k, (basic, bca, pct, valid) in hits.items():
                rows.append(
                    {
                        "gap": gap,
                        "subjects_per_group": n,
                        "metric": k,
                        "true_value": truth[k],
                        "coverage": basic / valid if valid else np.nan,
                        "coverage_bca": bca / valid if valid else np.nan,
                        "coverage_percentile": pct / valid if valid else np.nan,
                        "runs": valid,
                    }
                )
            print(f"gap {gap} n {n}: {time.perf_counter() - start:.0f} s", flush=True)
    table = pd.DataFrame(rows)
    if args.out:
        table.to_csv(args.out, index=False)
    pd.set_option("display.width", 200)
    for column, title in (
        ("coverage", "the reported 95% interval (basic bootstrap, floored at 0)"),
        ("coverage_bca", "the 95% BCa interval"),
        ("coverage_percentile", "the plain 95% percentile interval"),
    ):
        wide = table.pivot_table(
            index="metric", columns=["gap", "subjects_per_group"], values=column, sort=False
        )
        print(f"coverage of {title} (rows: metric; columns: gap, subjects per group)")
        print(wide.round(3).to_string())
    print(
        json.dumps({"runs": args.runs, "boot": args.boot, "seconds": time.perf_counter() - start})
    )
    return table


if __name__ == "__main__":
    main()
