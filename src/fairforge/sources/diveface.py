"""DiveFace (``diveface``): identity folders in six group folders, gender x ethnicity,
and its 70/30 split by identity (Exposure §4)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from fairforge.sources.base import ADAPTERS, SourceAdapter, SourceError, folder_listing, subdirs
from fairforge.sources.split import assign_subject_splits

# DiveFace folder names. The distributed archive uses ``4K_120/{G}{E}4K_120`` with Spanish
# initials: G is H (hombre, male) or M (mujer, female); E is A (asiático: East Asian),
# B (blanco: Caucasian) or N (negro: Sub-Saharan and South Indian). The repository's
# create_diveface.py writes ``Group{1,2,3}_{Male,Female}`` instead, with the groups in the
# README's order: 1 East Asian, 2 Sub-Saharan and South Indian, 3 Caucasian.
DIVEFACE_GENDER = {"H": "male", "M": "female"}
DIVEFACE_RACE = {"A": "Asian", "B": "Caucasian", "N": "Black"}
DIVEFACE_GROUP_RACE = {"1": "Asian", "2": "Black", "3": "Caucasian"}
_DIVE_INITIALS = re.compile(r"^([HM])([ABN])(?:\d|_|$)")
_DIVE_GROUP = re.compile(r"^Group([123])_(Male|Female)(?:_|$)", re.IGNORECASE)


def diveface_group(folder_name: str) -> dict[str, str] | None:
    """``{'race': .., 'gender': ..}`` for a DiveFace group folder name, or None."""
    m = _DIVE_INITIALS.match(folder_name)
    if m:
        return {"race": DIVEFACE_RACE[m.group(2)], "gender": DIVEFACE_GENDER[m.group(1)]}
    m = _DIVE_GROUP.match(folder_name)
    if m:
        return {"race": DIVEFACE_GROUP_RACE[m.group(1)], "gender": m.group(2).lower()}
    return None


# DiveFace's own split (Exposure §4, Data Preparation): "the original authors divided the
# entire data set into two sets, a training set and a test set, containing 70% and 30% of
# the identities". The release ships no list of them, so it is drawn by identity, per group.
DIVEFACE_SPLIT = {"train": 0.7, "test": 0.3}


@ADAPTERS.register("diveface")
class DiveFace(SourceAdapter):
    """DiveFace: ``{root}/{Group}/{subject}/*.jpg`` (also ``{root}/4K_120/{Group}/...``)
    with the six group folders mapped to race and gender as documented above.
    ``split: official`` is the dataset's 70/30 train/test split by identity
    (:data:`DIVEFACE_SPLIT`), drawn from the run's seed within each of the six groups."""

    default_group_by = ("race", "gender")

    def official_split(
        self, listing: pd.DataFrame, root: Path, *, seed: int = 0, **options
    ) -> pd.Series:
        groups = listing["attributes"].map(lambda a: f"{a['race']}_{a['gender']}")
        mapping = assign_subject_splits(listing["subject_id"], groups, DIVEFACE_SPLIT, seed)
        return listing["subject_id"].astype(str).map(mapping).astype(object)

    def list(self, root: Path, *, seed: int = 0) -> pd.DataFrame:
        base = root
        if not any(diveface_group(d.name) for d in subdirs(root)):
            nested = [d for d in subdirs(root) if any(diveface_group(x.name) for x in subdirs(d))]
            if len(nested) != 1:
                raise SourceError(
                    f"no DiveFace group folders (e.g. HA4K_120, Group1_Male) under {root}"
                    + (f"; several candidates {[d.name for d in nested]}" if nested else "")
                )
            base = nested[0]
        groups = {d: diveface_group(d.name) for d in subdirs(base)}
        unknown = [d.name for d, g in groups.items() if g is None]
        if unknown:
            raise SourceError(
                f"unrecognised DiveFace group folder(s) {unknown} under {base}; "
                f"expected names like HA4K_120 (H/M gender, A/B/N ethnicity) "
                f"or Group1_Male"
            )
        return folder_listing(base, root, groups)
