"""Time the subject bootstrap and permutation test on a million predictions.

1,000,000 predictions of 2,000 subjects in 4 groups, 6 approaches (real + 5 forgery
methods), 1,000 resamples / permutations. Run:

    python benchmarks/bench_bootstrap.py [--n 1000000] [--subjects 2000] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from fairforge.metrics import bootstrap_intervals, fairness_report, permutation_pvalues
from fairforge.metrics.resampling import bootstrap_replicates, stats_from_frame
from fairforge.seeding import rng_for

APPROACHES = ("real", "faceswap", "simswap", "fastreen", "dualreen", "maskgan")
GROUPS = ("African", "Asian", "Caucasian", "Indian")


def make_predictions(n: int, n_subjects: int, seed: int = 0) -> pd.DataFrame:
    rng = rng_for("bench_bootstrap", seed)
    subject = rng.integers(0, n_subjects, n)
    subject_group = np.arange(n_subjects) % len(GROUPS)
    method = rng.integers(0, len(APPROACHES), n)
    label = (method > 0).astype(np.int8)
    # subject and group effects on the fake-probability score
    subject_effect = rng.normal(0, 0.8, n_subjects) + 0.3 * subject_group
    logit = (2.0 * label - 1.0) + subject_effect[subject] + rng.normal(0, 1.0, n)
    return pd.DataFrame(
        {
            "sample_id": pd.RangeIndex(n).astype(str),
            "label": label,
            "method": pd.Categorical.from_codes(method, APPROACHES).astype(str),
            "group": pd.Categorical.from_codes(subject_group[subject], GROUPS).astype(str),
            "subject_id": pd.Categorical.from_codes(
                subject, [f"subj{i:05d}" for i in range(n_subjects)]
            ).astype(str),
            "score": (1 / (1 + np.exp(-logit))).astype(np.float32),
        }
    )


def timed(label: str, fn):
    """Run fn, print its wall time and its CPU time (this process, all threads): on a shared
    machine the wall time depends on the load, the CPU time much less."""
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    print(
        f"{label:<48s} {time.perf_counter() - start:7.2f} s wall "
        f"{time.process_time() - cpu:7.2f} s CPU"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--subjects", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()

    df = timed(f"make {args.n:,} predictions", lambda: make_predictions(args.n, args.subjects))
    timed("fairness_report (point estimates, AUCs)", lambda: fairness_report(df))
    stats = timed("subject sufficient statistics", lambda: stats_from_frame(df))
    timed(
        f"bootstrap replicates ({args.resamples}) from statistics",
        lambda: bootstrap_replicates(stats, n_boot=args.resamples),
    )
    table = timed(
        f"bootstrap_intervals end to end ({args.resamples})",
        lambda: bootstrap_intervals(df, n_boot=args.resamples),
    )
    pvalues = timed(
        f"permutation_pvalues end to end ({args.resamples})",
        lambda: permutation_pvalues(df, n_perm=args.resamples),
    )
    print(
        table.loc[
            ["DPD", "AADPD", "URDPD_one_plus_acc", "pooled_DEOdds"],
            ["estimate", "ci_low", "ci_high"],
        ]
        .round(4)
        .to_string()
    )
    print("permutation p (DPD, AADPD):", round(pvalues["DPD"], 4), round(pvalues["AADPD"], 4))


if __name__ == "__main__":
    main()
