"""The forgery acceptance numbers, read from a forgery quality card (forgery_quality.csv).

Shared by the workflow test, which reads the card of a real run, and the unit test that
builds a card from fakes made in the test, so both check the same statements:

- the card has a row per method × group;
- near-invisible fakes are under 1% per method (over all its groups);
- maskgan keeps the mean skin colour within 1 LAB unit of the kept image's, in every group;
- reenactment closes at least half the yaw and pitch gap to the driver on average over the
  groups where the poses were measured (the face found again in fake, source and driver);
- every method's fakes differ from the nearest other method's (of those keeping the same
  image) inside the union of their masks by at least half their change to the kept image.
"""

import itertools

import numpy as np
import pandas as pd

from fairforge.forgery.quality import kept_role

REENACTMENT = ("fastreen", "dualreen")


def check_forgery_card(card: pd.DataFrame, methods, groups, poses: bool = True) -> dict:
    """Assert the acceptance statements on the card rows of one dataset; returns the numbers
    read (per method) so a caller can report them. ``poses=False`` reads the reenactment
    gap closure without judging it (a handful of fakes is too few: the pitch read from 68
    landmarks moves with the expression a reenactment also transfers)."""
    methods, groups = list(methods), sorted(str(g) for g in groups)
    assert card["dataset"].nunique() == 1, "one dataset at a time"
    got = set(zip(card["method"], card["group"].astype(str)))
    assert got == set(itertools.product(methods, groups)), got ^ set(
        itertools.product(methods, groups)
    )
    numbers = {}
    for method, rows in card.groupby("method"):
        n = rows["n_fakes"].astype(float)
        invisible = float((rows["near_invisible"].astype(float) * n).sum() / n.sum())
        assert invisible < 0.01, (method, invisible)
        numbers[method] = {"near_invisible": invisible}
        # Separation partners: the other methods that composite into the same image.
        kept = kept_role(method, "classical")
        partners = [m for m in methods if m != method and kept_role(m, "classical") == kept]
        sep = rows["separation"].astype(float)
        if partners:
            assert sep.notna().all(), (method, rows[["group", "separation"]])
            assert (sep >= 0.5).all(), (method, rows[["group", "separation", "separation_from"]])
            assert set(rows["separation_from"]) <= set(partners)
        numbers[method]["separation_min"] = float(sep.min())
    if "maskgan" in methods:
        skin = card.loc[card["method"] == "maskgan", "skin_colour_shift"].astype(float)
        assert skin.notna().all() and (skin <= 1.0).all(), skin.tolist()
        numbers["maskgan"]["skin_colour_shift_max"] = float(skin.max())
    for method in (m for m in REENACTMENT if m in methods):
        rows = card.loc[card["method"] == method]
        for col in ("yaw_gap_closed", "pitch_gap_closed"):
            values = rows[col].astype(float)
            values = values[np.isfinite(values)]
            if poses and len(values):
                assert values.mean() >= 0.5, (method, col, values.tolist())
            numbers[method][col] = float(values.mean()) if len(values) else float("nan")
    return numbers
