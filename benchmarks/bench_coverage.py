"""Coverage of the subject-bootstrap intervals against known population values.

Simulated detectors: 4 groups, the approaches ``real`` and two forgery methods, per-(approach,
group) accuracies with a chosen gap between groups, and a subject-level random effect (each
subject's logit accuracy is shifted by u ~ N(0, sigma), the same shift on all its samples,
so samples of one subject are correlated as FairFD observed). The population value of each
cell is E_u[expit(logit p + u)] (Gauss-Hermite quadrature), and the true value of every
metric is the metric of the population cells. For each setting (gap x subjects per group),
``--runs`` data sets are drawn; for each, the reported interval (test inversion,
``inverted_intervals`` with its default nuisance), the same inversion with each nuisance
of ``--nuisances`` (``observed``: the observed gap pattern only; ``perturbed``: also 8
patterns moved by a sampling error; ``adaptive``: those moves shrunk row by row by the share
of the spread the noise does not explain; with ``--prepivot`` also the reported one
calibrated by prepivoting), the basic bootstrap interval floored at 0 and the plain percentile interval
are computed from one set of subject resamples, and the share of runs whose
interval holds the true value is printed per metric, with a control row (``ACC``, a plain
mean, whose interval should cover about 95%: all metrics share the data sets, so it shows
the Monte Carlo error they share) and the share of runs whose reported interval lies above
the truth. ``--pattern spaced`` replaces the default gap pattern, whose truth has near-ties
at the extremes of some ranges, by one without. Usage::

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

from fairforge.metrics.fairness import NOT_GAPS, metrics_from_cell_counts
from fairforge.metrics.intervals import basic_interval
from fairforge.metrics.inversion import NUISANCES, inverted_intervals
from fairforge.metrics.resampling import SubjectStats, bootstrap_noise, point_estimates
from fairforge.seeding import rng_for

GROUPS = ("g0", "g1", "g2", "g3")
APPROACHES = ("real", "fake1", "fake2")
BASE = np.array([0.85, 0.75, 0.65])  # per approach, the accuracy of the middle group
# Per (approach, group), the spread of the accuracies in units of gap / 3.
PATTERNS = {
    # the default: its truth has near-ties at the extremes that ranges take (the fake-mean
    # accuracy of g0 and g1 within 0.002 at gap 0.15, the pooled positive rate of g2 and g3
    # within 0.005), so several ranges stay non-smooth however many subjects there are
    "mixed": np.array([[-1.5, -0.5, 0.5, 1.5], [1.0, -1.0, 0.5, -0.5], [-0.5, 1.5, -1.5, 0.5]]),
    # every per-group vector a metric takes a range of (each approach, the mean over all and
    # over the forgery approaches, the pooled positive rate) has its two highest and two
    # lowest groups at least a third of its range apart
    "spaced": np.array([[-1.5, -0.5, 0.5, 1.5], [1.5, -0.5, 0.5, -1.5], [1.5, 0.5, -0.5, -1.5]]),
}
# A control: the overall accuracy is a plain mean over independent subjects, so its bootstrap
# intervals should cover about 95% at every setting; its row shows how far the same simulated
# data sets' Monte Carlo error moves every row of a column (all metrics share the data sets).
CONTROL = "ACC"
INTERVALS = {
    "coverage": "the reported 95% interval (test inversion, adaptive moves of the pattern)",
    "coverage_observed": "the test inversion along the observed gap pattern only",
    "coverage_perturbed": "the test inversion over the observed and 8 perturbed patterns",
    "coverage_adaptive": "the test inversion over the observed and 8 moved patterns, each "
    "row's moves shrunk by its signal share",
    "coverage_prepivoted": "the reported test inversion, prepivoted",
    "coverage_basic": "the basic bootstrap interval, floored at 0",
    "coverage_percentile": "the plain 95% percentile interval",
}


def cell_accuracy(gap: float, pattern: str = "mixed") -> np.ndarray:
    """(F, S) accuracies: each approach spreads its groups over at most ``gap`` (its range)."""
    return BASE[:, None] + gap * PATTERNS[pattern] / 3.0


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


def intervals(
    stats: SubjectStats,
    n_boot: int,
    seed: int,
    prepivot: bool = False,
    nuisances: tuple[str, ...] = NUISANCES,
) -> dict[str, dict[str, tuple]]:
    """Per gap metric, the intervals of one data set: the reported one, the inversion with
    each of ``nuisances``, the prepivoted one if asked, basic and percentile."""
    estimate = point_estimates(stats)
    reps, noise = bootstrap_noise(stats, n_boot, seed)
    found = {"coverage": inverted_intervals(stats, noise)}
    for nuisance in nuisances:
        found[f"coverage_{nuisance}"] = inverted_intervals(stats, noise, nuisance=nuisance)
    if prepivot:
        found["coverage_prepivoted"] = inverted_intervals(stats, noise, calibrate=True)
    # the reported interval of a metric without inversion is the basic one (bootstrap_intervals)
    control = basic_interval(estimate[CONTROL], reps[CONTROL], floor=0.0)
    for ci in found.values():
        ci[CONTROL] = control
    out = {}
    for k in found["coverage"]:
        valid = reps[k][np.isfinite(reps[k])]
        pct = tuple(np.quantile(valid, [0.025, 0.975])) if valid.size else (np.nan, np.nan)
        out[k] = {name: ci[k] for name, ci in found.items()} | {
            "coverage_basic": basic_interval(estimate[k], reps[k], floor=0.0),
            "coverage_percentile": pct,
        }
    return out


def show(table: pd.DataFrame) -> None:
    pd.set_option("display.width", 200)
    for column, title in INTERVALS.items():
        if column not in table:
            continue
        wide = table.pivot_table(
            index="metric", columns=["gap", "subjects_per_group"], values=column, sort=False
        )
        print(f"coverage of {title} (rows: metric; columns: gap, subjects per group)")
        print(wide.round(3).to_string())
    if "below" in table:
        wide = table.pivot_table(
            index="metric", columns=["gap", "subjects_per_group"], values="below", sort=False
        )
        print("share of runs whose reported interval lies above the truth (a miss from above)")
        print(wide.round(3).to_string())
    runs = table["runs"]
    gaps = table["metric"] != CONTROL
    worst = table.loc[gaps & (table["gap"] > 0), "coverage"]
    control = table.loc[~gaps, "coverage"]
    if control.size:
        print(
            f"control ({CONTROL}, a plain mean; its reported interval is the basic one): "
            f"{control.min():.3f}-{control.max():.3f}"
        )
    print(
        f"runs per cell {runs.min()}-{runs.max()}; Monte Carlo standard error at 0.95: "
        f"{np.sqrt(0.95 * 0.05 / runs.min()):.3f}; reported interval, non-zero gaps: "
        f"{worst.min():.3f}-{worst.max():.3f}"
    )


def markdown(table: pd.DataFrame) -> str:
    """The table of docs/metrics.md section 4: per metric and (gap, subjects per group), the
    reported interval's coverage, then (the other inversions measured, basic, percentile)."""
    table = table.sort_values(["gap", "subjects_per_group"], kind="stable")
    extra = [f"coverage_{n}" for n in NUISANCES if f"coverage_{n}" in table]
    cells = list(dict.fromkeys(zip(table["gap"], table["subjects_per_group"])))
    lines = [
        "| metric | " + " | ".join(f"{g:g} / {n}" for g, n in cells) + " |",
        "| --- |" + " --- |" * len(cells),
    ]
    for metric in dict.fromkeys(table["metric"]):
        rows = table[table["metric"] == metric].set_index(["gap", "subjects_per_group"])
        parts = []
        for cell in cells:
            r = rows.loc[cell]
            others = ", ".join(
                f"{r[c]:.2f}"
                for c in (*extra, "coverage_basic", "coverage_percentile")
                if c in r.index and np.isfinite(r[c])
            )
            parts.append(f"{r['coverage']:.3f} ({others})")
        lines.append(f"| {metric} | " + " | ".join(parts) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[30, 300, 2500])
    ap.add_argument("--gaps", type=float, nargs="+", default=[0.0, 0.05, 0.15])
    ap.add_argument("--per-cell", type=int, default=4, help="samples per subject and approach")
    ap.add_argument("--sigma", type=float, default=0.8, help="sd of the subject logit effect")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--pattern", choices=sorted(PATTERNS), default="mixed", help="the gaps' pattern"
    )
    ap.add_argument("--prepivot", action="store_true", help="also the prepivoted inversion (slow)")
    ap.add_argument(
        "--nuisances",
        nargs="*",
        choices=NUISANCES,
        default=list(NUISANCES),
        help="the inversions measured beside the reported one (its own nuisance included)",
    )
    ap.add_argument("--out", help="also write the long table (csv) here")
    ap.add_argument("--show", nargs="+", help="print the tables of these csv files and stop")
    ap.add_argument(
        "--markdown", action="store_true", help="with --show: also the docs' markdown table"
    )
    args = ap.parse_args(argv)
    if args.show:
        table = pd.concat([pd.read_csv(f) for f in args.show], ignore_index=True)
        show(table)
        if args.markdown:
            print(markdown(table))
        return table

    rows = []
    start = time.perf_counter()
    for gap in args.gaps:
        p = cell_accuracy(gap, args.pattern)
        pop = population_cells(p, args.sigma)
        truth = {
            k: float(v)
            for k, v in metrics_from_cell_counts(pop, np.ones_like(pop), 0).items()
            if k not in NOT_GAPS or k == CONTROL
        }
        for n in args.sizes:
            measured = {"coverage", *(f"coverage_{n}" for n in args.nuisances)}
            measured |= {"coverage_basic", "coverage_percentile"}
            measured |= {"coverage_prepivoted"} if args.prepivot else set()
            columns = [c for c in INTERVALS if c in measured]
            hits = {k: dict.fromkeys([*columns, "below", "runs"], 0) for k in truth}
            for run in range(args.runs):
                rng = rng_for(args.seed, "bench_coverage", gap, n, run)
                stats = simulate(p, n, args.per_cell, args.sigma, rng)
                found_all = intervals(stats, args.boot, run, args.prepivot, tuple(args.nuisances))
                for k, found in found_all.items():
                    if not np.isfinite(found["coverage"][0]):
                        continue
                    t, tol = truth[k], 1e-9
                    for name, (low, high) in found.items():
                        hits[k][name] += low - tol <= t <= high + tol
                    hits[k]["below"] += t < found["coverage"][0] - tol
                    hits[k]["runs"] += 1
            for k, h in hits.items():
                valid = h["runs"]
                rows.append(
                    {"gap": gap, "subjects_per_group": n, "metric": k, "true_value": truth[k]}
                    | {c: h[c] / valid if valid else np.nan for c in [*columns, "below"]}
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
