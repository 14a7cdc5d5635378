"""The forgery quality card: per dataset, method, backend and group, how good the fakes are.

One row per dataset × method × backend × group (one backend per method unless the config
compares several, ``forgery.quality.compare_backends``: :func:`measure_compared` forges the
same pairs with the other backend). For every measure of
:data:`fairforge.forgery.quality.CARD_MEASURES`: the mean over the group's fakes (for the
ratio measures of :data:`~fairforge.forgery.quality.RATIO_MEASURES`, the ratio of the sums),
a subject-level bootstrap interval (the group's subjects resampled with replacement, all of
a subject's fakes moving together, as :mod:`fairforge.metrics.resampling` does for the
fairness metrics) and the p-value of a Kruskal–Wallis test of equality across the method's
groups on per-subject means (``{measure}_p``, the same in every group row of the method).
A group ``differs`` in a measure when that p-value is below :data:`ALPHA` and the group's
interval excludes the median of the groups' means (the typical group: with one odd group
out of four, only that one is named; with two groups, both are). Why: if the fakes of one group are easier to
spot, a detector's group gap measures the generator, not the detector. The backends of a
method are resampled with the same draws (the bootstrap's seed names no backend), so their
intervals differ by their fakes, not by the luck of the resampling.

Method separation (:func:`fairforge.forgery.quality.method_separation`, when given): per
row, the other method whose fakes of the same faces are closest (``separation_from``), the
ratio of their mean difference inside the union of masks to their mean change
(``separation``; below 0.5 the two methods are one family) and the number of fakes compared
(``n_separation``), on the rows of the backend that forged the method's fakes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ..forgery import forge_shard
from ..forgery.quality import (
    CARD_MEASURES,
    IDENTITY_PER_GROUP,
    RATIO_MEASURES,
    gap_terms,
    measure_forgeries,
)
from ..metrics.resampling import counts_from_indices
from ..seeding import rng_for

ALPHA = 0.05
LEVEL = 0.95


def measure_method(
    forgeries: pd.DataFrame,
    faces: pd.DataFrame,
    results_dir: str | Path,
    dataset: str,
    seed: int,
    encoder: str = "dlib_resnet",
    identity_per_group: int | None = IDENTITY_PER_GROUP,
) -> pd.DataFrame:
    """Per-fake measures of one method's manifest, identity through ``encoder``."""
    from ..encoders import create_encoder  # torch: only the jobs that embed import it

    embed = create_encoder(encoder).embed
    return measure_forgeries(
        forgeries, faces, results_dir, dataset, seed, embed, identity_per_group
    )


def measure_compared(
    method: str,
    backend: str,
    inputs: tuple[str | Path, str | Path, str | Path],
    ids: list[str],
    results_dir: str | Path,
    out_rel_dir: str,
    dataset: str,
    seed: int,
    options: dict | None = None,
    identity_per_group: int | None = IDENTITY_PER_GROUP,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The source images ``ids`` forged again by ``method`` with ``backend`` (the pairs, the
    targets and the seeds of the method's own forgery), their fakes written under
    ``out_rel_dir``; returns the per-fake measures (:func:`measure_method`) and the forgery
    rows, failures included. ``inputs`` are the sources, faces and pairs manifests."""
    from ..forgery.shard import read_forgery_inputs

    sources, faces, pairs = inputs
    pairs_df, faces_df = read_forgery_inputs(sources, faces, pairs, ids, method, backend)
    made = forge_shard(
        method, backend, pairs_df, faces_df, results_dir, out_rel_dir, seed, options, ids
    )
    measured = measure_method(
        made, faces_df, results_dir, dataset, seed, identity_per_group=identity_per_group
    )
    return measured, made


SEPARATION_CARD_COLUMNS = ["separation", "separation_from", "n_separation"]
KEYS = ["dataset", "method", "backend", "group"]


def card_columns() -> list[str]:
    cols = [*KEYS, "n_fakes", "n_subjects", "n_identity"]
    for m in CARD_MEASURES:
        cols += [m, f"{m}_ci_low", f"{m}_ci_high", f"{m}_p"]
    return cols + SEPARATION_CARD_COLUMNS + ["differs"]


def _terms(part: pd.DataFrame, measure: str) -> tuple[pd.Series, pd.Series]:
    """Per fake, the numerator and denominator whose sums make the measure: the value and 1
    for a mean; :func:`~fairforge.forgery.quality.gap_terms` for a gap ratio (NaN when the
    per-fake table lacks the poses)."""
    if measure not in RATIO_MEASURES:
        return part[measure].astype(float), pd.Series(1.0, index=part.index)
    cols = RATIO_MEASURES[measure][1]
    if not set(cols) <= set(part.columns):
        nan = pd.Series(np.nan, index=part.index)
        return nan, nan
    moved, gap = gap_terms(*(part[c].astype(float).to_numpy() for c in cols))
    return pd.Series(moved, index=part.index), pd.Series(gap, index=part.index)


def _subject_sums(part: pd.DataFrame, measure: str) -> tuple[np.ndarray, np.ndarray]:
    """Per subject (sorted) with a finite value: the sums of the measure's numerator and
    denominator (for a mean: of the values, and their count)."""
    num, den = _terms(part, measure)
    keep = np.isfinite(num) & np.isfinite(den)
    subjects = part.loc[keep, "subject_id"].astype(str)
    sums = num[keep].groupby(subjects, sort=True).sum().to_numpy()
    return sums, den[keep].groupby(subjects, sort=True).sum().to_numpy().astype(float)


def subject_bootstrap(
    sums: np.ndarray, counts: np.ndarray, n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    """(B,) pooled means of resamples of the subjects (with replacement)."""
    n = len(sums)
    if n == 0 or n_boot <= 0:
        return np.full(max(n_boot, 0), np.nan)
    weights = counts_from_indices(rng.integers(0, n, size=(n_boot, n)), n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ sums) / (weights @ counts)


def _per_subject(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per-subject values (sum over denominator) of the subjects with a non-zero one."""
    keep = counts > 0
    return sums[keep] / counts[keep]


def _kruskal_p(per_group_means: list[np.ndarray]) -> float:
    samples = [m[np.isfinite(m)] for m in per_group_means]
    samples = [s for s in samples if len(s)]
    if len(samples) < 2:
        return float("nan")
    pooled = np.concatenate(samples)
    if np.ptp(pooled) == 0:
        return 1.0  # every subject alike: nothing differs
    from scipy.stats import kruskal  # scipy.stats costs a second to import; the planner skips it

    return float(kruskal(*samples).pvalue)


def separation_summary(separation: pd.DataFrame | None) -> pd.DataFrame:
    """Per dataset × method × group: the nearest other method (``separation_from``), the
    ratio of summed ``between`` to summed ``own`` against it (``separation``) and the number
    of fakes compared (``n_separation``)."""
    keys = ["dataset", "method", "group"]
    if separation is None or separation.empty:
        return pd.DataFrame(columns=keys + SEPARATION_CARD_COLUMNS)
    sep = separation.assign(group=separation["group"].astype(str))
    sep = sep.loc[np.isfinite(sep["between"].astype(float)) & np.isfinite(sep["own"].astype(float))]
    per_other = sep.groupby([*keys, "other"], sort=True).agg(
        between=("between", "sum"), own=("own", "sum"), n_separation=("between", "size")
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        per_other["separation"] = per_other["between"] / per_other["own"]
    per_other = per_other.reset_index().sort_values([*keys, "separation", "other"], kind="stable")
    nearest = (
        per_other.groupby(keys, sort=True).head(1).rename(columns={"other": "separation_from"})
    )
    return nearest[keys + SEPARATION_CARD_COLUMNS].reset_index(drop=True)


def quality_card(
    fakes: pd.DataFrame,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = LEVEL,
    separation: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The card (:func:`card_columns`) of per-fake measures of any datasets and methods, one
    backend each, with the method separation of ``separation`` (rows of
    :func:`~fairforge.forgery.quality.method_separation`) where given."""
    rows = []
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    fakes = fakes.assign(group=fakes["group"].astype(str))
    for (dataset, method, backend), frame in fakes.groupby(KEYS[:3], sort=True):
        groups = sorted(frame["group"].unique())
        parts = {g: frame.loc[frame["group"] == g] for g in groups}
        per_group = {
            g: {
                "dataset": dataset,
                "method": method,
                "backend": backend,
                "group": g,
                "n_fakes": len(p),
                "n_subjects": p["subject_id"].nunique(),
                "n_identity": int(p["identity_sampled"].sum()),
            }
            for g, p in parts.items()
        }
        differs: dict[str, list[str]] = {g: [] for g in groups}
        for measure in CARD_MEASURES:
            stats = {g: _subject_sums(p, measure) for g, p in parts.items()}
            p_value = _kruskal_p([_per_subject(s, c) for s, c in stats.values()])
            means = {g: s.sum() / c.sum() if c.sum() > 0 else np.nan for g, (s, c) in stats.items()}
            finite = [v for v in means.values() if np.isfinite(v)]
            reference = float(np.median(finite)) if finite else np.nan
            for g in groups:
                s, c = stats[g]
                mean = means[g]
                rng = rng_for("fairforge.forgery_quality", seed, dataset, method, g, measure)
                boot = subject_bootstrap(s, c, n_boot, rng)
                boot = boot[np.isfinite(boot)]
                lo, hi = np.quantile(boot, [lo_q, hi_q]) if boot.size else (np.nan, np.nan)
                per_group[g].update(
                    {
                        measure: mean,
                        f"{measure}_ci_low": lo,
                        f"{measure}_ci_high": hi,
                        f"{measure}_p": p_value,
                    }
                )
                if p_value < ALPHA and not (lo <= reference <= hi):
                    differs[g].append(measure)
        for g in groups:
            per_group[g]["differs"] = ", ".join(differs[g])
            rows.append(per_group[g])
    card = pd.DataFrame(
        rows, columns=[c for c in card_columns() if c not in SEPARATION_CARD_COLUMNS]
    )
    keys = ["dataset", "method", "group"]
    card = card.merge(separation_summary(separation), on=keys, how="left", validate="1:1")
    card["n_separation"] = card["n_separation"].fillna(0).astype(int)
    return card[card_columns()]


def card_from_files(
    paths: Iterable[str | Path],
    n_boot: int = 1000,
    seed: int = 0,
    separation: Iterable[str | Path] = (),
    compared: Iterable[str | Path] = (),
):
    """The card of the per-fake parquet files of :func:`measure_method`, with the method
    separation files of :func:`~fairforge.forgery.quality.method_separation`, and the rows of
    the other backends' files of :func:`measure_compared` (no separation: their fakes are
    not the ones the methods were separated by)."""

    def read(files) -> pd.DataFrame | None:
        frames = [f for f in (pd.read_parquet(p) for p in files) if len(f)]
        return pd.concat(frames, ignore_index=True) if frames else None

    fakes, others = read(paths), read(compared)
    cards = [
        quality_card(frame, n_boot=n_boot, seed=seed, separation=sep)
        for frame, sep in ((fakes, read(separation)), (others, None))
        if frame is not None
    ]
    if not cards:
        return pd.DataFrame(columns=card_columns())
    card = pd.concat(cards, ignore_index=True) if len(cards) > 1 else cards[0]
    return card.sort_values(KEYS, kind="stable", ignore_index=True)


def quality_verdicts(card: pd.DataFrame) -> pd.DataFrame:
    """Per dataset × method × backend, one column per group: ``equal`` or
    ``differs: <measures>``."""
    if card.empty:
        return pd.DataFrame(columns=KEYS[:3])
    cells = card.assign(
        verdict=[f"differs: {d}" if isinstance(d, str) and d else "equal" for d in card["differs"]]
    )
    wide = cells.pivot_table(index=KEYS[:3], columns="group", values="verdict", aggfunc="first")
    wide.columns.name = None
    return wide.reset_index()


def quality_view(card: pd.DataFrame) -> pd.DataFrame:
    """The card as the report shows it: per row, each measure as "mean [low, high]"."""
    if card.empty:
        return card
    out = card[[*KEYS, "n_fakes", "n_subjects", "n_identity"]].copy()
    for m in CARD_MEASURES:
        out[m] = [
            "–" if not np.isfinite(v) else f"{v:.3g} [{lo:.3g}, {hi:.3g}]"
            for v, lo, hi in zip(card[m], card[f"{m}_ci_low"], card[f"{m}_ci_high"])
        ]
    out["separation"] = [
        "–" if not np.isfinite(float(v)) else f"{float(v):.3g} vs {other}"
        for v, other in zip(card["separation"], card["separation_from"])
    ]
    return out
