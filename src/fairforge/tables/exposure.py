"""The ranking-exposure tables as the report shows them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: The columns naming one ranking study (a dataset when several are ranked, a distance).
STUDY_KEYS = ("dataset", "distance")


def study_keys(frame: pd.DataFrame) -> list[str]:
    """The :data:`STUDY_KEYS` a ranking output has."""
    return [c for c in STUDY_KEYS if c in frame.columns]


def exposure_summary(exposure: pd.DataFrame) -> pd.DataFrame:
    """The exposure table a reader compares encoders by: the study (dataset, distance),
    encoder, setting, convention, hit ratios, disparate visibility and exposure (equation
    7's, then the conditional ones of the paper's figures where present), then visibility
    and exposure of each group."""
    lead = [*study_keys(exposure), "encoder", "setting", "convention"]
    hits = [c for c in exposure.columns if c.startswith("hit_ratio@")]
    disparate = [
        c
        for c in (
            "disparate_visibility",
            "disparate_exposure",
            "disparate_visibility_conditional",
            "disparate_exposure_conditional",
        )
        if c in exposure.columns
    ]
    per_group = [c for c in exposure.columns if c.startswith("visibility_")] + [
        c for c in exposure.columns if c.startswith("exposure_")
    ]
    return exposure[lead + hits + disparate + per_group].reset_index(drop=True)


def exposure_matrix(
    per_probe_group: pd.DataFrame, values: Sequence[str] = ("visibility", "exposure")
) -> pd.DataFrame:
    """The per-probe-group matrices side by side: rows (dataset, distance,) encoder x
    setting x convention x probe group (with its number of probes), for each of ``values``
    one column per gallery group ("exposure of tone2": the exposure of that gallery group
    in the rankings of these probes). Studies, encoders, settings and conventions keep
    their order in the file."""
    keys = [*study_keys(per_probe_group), "encoder", "setting", "convention"]
    index = [*keys, "probe_group", "n_probes"]
    galleries = sorted(per_probe_group["gallery_group"].astype(str).unique())
    frame = per_probe_group.assign(gallery_group=per_probe_group["gallery_group"].astype(str))
    wide = frame.pivot_table(
        index=index, columns="gallery_group", values=list(values), aggfunc="first", sort=False
    )
    wide = wide.reindex(columns=[(v, g) for v in values for g in galleries])
    wide.columns = [f"{v} of {g}" for v, g in wide.columns]
    wide = wide.reset_index()
    ranks = {
        f"_{k}": wide[k].map({v: i for i, v in enumerate(dict.fromkeys(frame[k]))}) for k in keys
    }
    return (
        wide.assign(**ranks)
        .sort_values([*ranks, "probe_group"], kind="stable")
        .drop(columns=list(ranks))
        .reset_index(drop=True)
    )


def most_exposed_groups(exposure: pd.DataFrame, convention: str = "false_positive") -> pd.DataFrame:
    """Per study, encoder and setting, the group with the largest exposure under
    ``convention`` (``false_positive``: the group most exposed as a wrong suspect), its
    exposure and the runner-up's. Ties go to the first group by name; a group that a study
    does not have (another dataset's) is left out."""
    rows = []
    groups = sorted(c[len("exposure_") :] for c in exposure.columns if c.startswith("exposure_"))
    for _, row in exposure.loc[exposure["convention"] == convention].iterrows():
        values = pd.Series({g: float(row[f"exposure_{g}"]) for g in groups}).dropna()
        if values.empty:
            continue
        ordered = values.iloc[np.lexsort((np.arange(len(values)), -values.to_numpy()))]
        rows.append(
            {
                **({"dataset": row["dataset"]} if "dataset" in exposure.columns else {}),
                "encoder": row["encoder"],
                "setting": row["setting"],
                "distance": row.get("distance", np.nan),
                "group": ordered.index[0],
                "exposure": float(ordered.iloc[0]),
                "runner_up": ordered.index[1] if len(ordered) > 1 else "",
                "runner_up_exposure": float(ordered.iloc[1]) if len(ordered) > 1 else np.nan,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            *(["dataset"] if "dataset" in exposure.columns else []),
            "encoder",
            "setting",
            "distance",
            "group",
            "exposure",
            "runner_up",
            "runner_up_exposure",
        ],
    )


def averaged_view(averaged_ks: pd.DataFrame, quantity: str = "exposure") -> pd.DataFrame:
    """The exposure averaged across encoders (the Exposure paper's Fig. 2) as the report
    shows it: per study, setting, convention and encoder view, every pair of groups with
    both means, their difference and the KS test, most significant first."""
    rows = averaged_ks[averaged_ks["quantity"] == quantity]
    keys = [*study_keys(rows), "setting", "convention", "trained"]
    columns = [*keys, "n_encoders", "group_a", "group_b", "mean_a", "mean_b", "delta"]
    columns += ["statistic", "pvalue", "pvalue_holm"]
    ranks = {
        f"_{k}": rows[k].map({v: i for i, v in enumerate(dict.fromkeys(rows[k]))}) for k in keys
    }
    return (
        rows.assign(**ranks)
        .sort_values([*ranks, "pvalue"], kind="stable")[columns]
        .reset_index(drop=True)
    )
