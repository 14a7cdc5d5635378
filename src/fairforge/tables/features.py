"""FairFD's analyses of subjects and features (A.6 and A.7; Figs. 5-7).

- :func:`subject_rates_table`: per detector, dataset and subject of the clean evaluated
  split, the subject's TPR and TNR (Fig. 5), and :func:`subject_rates_summary`, their
  spread per group as the report shows it.
- :func:`feature_mmd_table`: per detector, dataset and approach, the MMD between each
  group's penultimate features and the reference group's (Fig. 7), with its permutation
  p-value (:mod:`fairforge.metrics.mmd`).
- :func:`tsne_coordinates`: the t-SNE map of those features, all groups of an approach
  embedded together (Fig. 6).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairforge.metrics.conventions import DEFAULT_CONVENTIONS, Conventions
from fairforge.metrics.mmd import mmd_test
from fairforge.metrics.subjects import SUBJECT_RATE_COLUMNS, subject_rates
from fairforge.perturb import CLEAN
from fairforge.seeding import derive_seed
from fairforge.tables.predictions import evaluation_rows, groups_of

RATE_KEYS = ["dataset", "detector"]
FEATURE_KEYS = [*RATE_KEYS, "method"]
MMD_COLUMNS = [
    *FEATURE_KEYS,
    "group",
    "reference_group",
    "n",
    "n_reference",
    "mmd2",
    "bandwidth",
    "p_value",
    "permutations",
    "reason",
]
#: t-SNE needs a few points per embedding (sklearn: perplexity < points).
MIN_TSNE_POINTS = 4


def subject_rates_table(
    preds: pd.DataFrame,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    split: str | None = "test",
    variant: str = CLEAN,
) -> pd.DataFrame:
    """:func:`~fairforge.metrics.subjects.subject_rates` of each dataset x detector on the
    ``split`` rows of ``variant`` (at the threshold and rule of ``conventions``): columns
    dataset, detector, then the per-subject columns."""
    if "variant" in preds.columns:
        preds = preds.loc[preds["variant"] == variant]
    parts = []
    for (dataset, detector), part in groups_of(evaluation_rows(preds, split), RATE_KEYS):
        rates = subject_rates(
            part["label"],
            part["score"],
            part["subject_id"],
            part["group"],
            conventions.threshold,
            conventions.threshold_rule,
        )
        parts.append(rates.assign(dataset=dataset, detector=detector))
    columns = [*RATE_KEYS, *SUBJECT_RATE_COLUMNS]
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]


def subject_rates_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, detector and group: how many subjects have each rate, and its mean,
    standard deviation, minimum and maximum over those subjects."""
    rows = []
    for (dataset, detector, group), part in table.groupby(
        ["dataset", "detector", "group"], sort=True
    ):
        row = {"dataset": dataset, "detector": detector, "group": group}
        for rate in ("TPR", "TNR"):
            values = part[rate].dropna().to_numpy(np.float64)
            row[f"{rate} subjects"] = len(values)
            for name, stat in (("mean", np.mean), ("std", np.std), ("min", np.min)):
                row[f"{rate} {name}"] = float(stat(values)) if len(values) else np.nan
            row[f"{rate} max"] = float(values.max()) if len(values) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _stacked(part: pd.DataFrame) -> np.ndarray:
    return np.stack([np.asarray(v, dtype=np.float64) for v in part["feature"]])


def feature_mmd_table(
    features: pd.DataFrame,
    reference_group: str | None = None,
    permutations: int = 200,
    seed: int = 0,
) -> pd.DataFrame:
    """Per dataset, detector and approach (``method``), each group's MMD² to
    ``reference_group`` (None: the first group in sorted order) with its permutation
    p-value. A group or reference of fewer than two samples gets NaN and a ``reason``."""
    rows = []
    for (dataset, detector, method), part in groups_of(features, FEATURE_KEYS):
        groups = sorted(part["group"].astype(str).unique())
        reference = reference_group if reference_group is not None else groups[0]
        ref = part.loc[part["group"].astype(str) == reference]
        for group in [g for g in groups if g != reference]:
            mine = part.loc[part["group"].astype(str) == group]
            row = {
                "dataset": dataset,
                "detector": detector,
                "method": method,
                "group": group,
                "reference_group": reference,
                "n": len(mine),
                "n_reference": len(ref),
                "mmd2": np.nan,
                "bandwidth": np.nan,
                "p_value": np.nan,
                "permutations": permutations,
                "reason": "",
            }
            if len(ref) < 2 or len(mine) < 2:
                row["reason"] = (
                    f"fewer than 2 samples ({group}: {len(mine)}, {reference}: {len(ref)})"
                )
            else:
                result = mmd_test(
                    _stacked(mine),
                    _stacked(ref),
                    permutations,
                    derive_seed(seed, "mmd", dataset, detector, method, group),
                )
                row.update(mmd2=result.mmd2, bandwidth=result.bandwidth, p_value=result.p_value)
            rows.append(row)
    return pd.DataFrame(rows, columns=MMD_COLUMNS)


def tsne_coordinates(
    features: pd.DataFrame, perplexity: float = 30.0, seed: int = 0
) -> pd.DataFrame:
    """The 2-d t-SNE map of each dataset x detector x approach's features, every group of
    the approach embedded together (sklearn's TSNE, PCA start, seeded; perplexity lowered to
    (n - 1) / 3 for a small sample). Columns: the feature frame's but ``feature``, then x,
    y; an approach of fewer than :data:`MIN_TSNE_POINTS` samples is left out."""
    from sklearn.manifold import TSNE

    parts = []
    for (dataset, detector, method), part in groups_of(features, FEATURE_KEYS):
        if len(part) < MIN_TSNE_POINTS:
            continue
        tsne = TSNE(
            n_components=2,
            perplexity=min(float(perplexity), (len(part) - 1) / 3),
            init="pca",
            random_state=derive_seed(seed, "tsne", dataset, detector, method) % 2**32,
        )
        xy = tsne.fit_transform(_stacked(part))
        parts.append(part.drop(columns="feature").assign(x=xy[:, 0], y=xy[:, 1]))
    if not parts:
        return pd.DataFrame(columns=[*[c for c in features.columns if c != "feature"], "x", "y"])
    return pd.concat(parts, ignore_index=True)
