"""The ranking-exposure tables as the report shows them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def exposure_summary(exposure: pd.DataFrame) -> pd.DataFrame:
    """The exposure table a reader compares encoders by: encoder, setting, convention, hit
    ratios, disparate visibility and exposure (equation 7's, then the conditional ones of the
    paper's figures where present), then visibility and exposure of each group."""
    lead = ["encoder", "setting", "convention"]
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
    """The per-probe-group matrices side by side: rows encoder x setting x convention x
    probe group (with its number of probes), for each of ``values`` one column per gallery
    group ("exposure of tone2": the exposure of that gallery group in the rankings of
    these probes). Encoders, settings and conventions keep their order in the file."""
    keys = ["encoder", "setting", "convention"]
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
    """Per encoder and setting, the group with the largest exposure under ``convention``
    (``false_positive``: the group most exposed as a wrong suspect), its exposure and the
    runner-up's. Ties go to the first group by name."""
    rows = []
    groups = sorted(c[len("exposure_") :] for c in exposure.columns if c.startswith("exposure_"))
    for _, row in exposure.loc[exposure["convention"] == convention].iterrows():
        values = pd.Series({g: float(row[f"exposure_{g}"]) for g in groups}).dropna()
        if values.empty:
            continue
        ordered = values.iloc[np.lexsort((np.arange(len(values)), -values.to_numpy()))]
        rows.append(
            {
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
            "encoder",
            "setting",
            "distance",
            "group",
            "exposure",
            "runner_up",
            "runner_up_exposure",
        ],
    )
