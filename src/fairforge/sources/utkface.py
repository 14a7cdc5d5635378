"""UTKFace (``utkface``): labels in the file names ``age_gender_race_date.jpg``.

UTKFace has no identities, so each image is its own subject.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.sources.base import (
    ADAPTERS,
    SourceAdapter,
    SourceError,
    image_id_from_path,
    iter_images,
    listing_frame,
    listing_row,
)

UTK_GENDERS = {0: "male", 1: "female"}
UTK_RACES = {0: "White", 1: "Black", 2: "Asian", 3: "Indian", 4: "Others"}
_UTK_NAME = re.compile(r"^(\d+)_(\d+)_(\d+)_(\d+)$")


def parse_utkface_name(name: str) -> dict[str, object]:
    """Labels of ``age_gender_race_date.jpg[.chip.jpg]``; :class:`ValueError` says why not."""
    base = name.split(".", 1)[0]
    m = _UTK_NAME.match(base)
    if not m:
        raise ValueError("malformed UTKFace name (expected age_gender_race_date.jpg)")
    age, gender, race = (int(m.group(i)) for i in (1, 2, 3))
    if gender not in UTK_GENDERS:
        raise ValueError(f"unknown UTKFace gender code {gender}")
    if race not in UTK_RACES:
        raise ValueError(f"unknown UTKFace race code {race}")
    return {"age": age, "gender": UTK_GENDERS[gender], "race": UTK_RACES[race]}


@ADAPTERS.register("utkface")
class UTKFace(SourceAdapter):
    """UTKFace: labels parsed from file names anywhere below ``root``.

    UTKFace has no identities, so each image is its own subject. A name that does not parse
    (a few official files lack a field) stays as an ``ok=False`` row with the reason. Its
    "Aligned&Cropped Faces" (``.jpg.chip.jpg``) are the release's aligned crops; its
    in-the-wild images are not (:meth:`release_aligned`).
    """

    default_group_by = ("race",)

    def release_aligned(self, paths: pd.Series) -> np.ndarray:
        return paths.astype(str).str.lower().str.endswith(".chip.jpg").to_numpy(bool)

    def list(self, root: Path, *, seed: int = 0) -> pd.DataFrame:
        rows = []
        for f in iter_images(root):
            rel = f.relative_to(root).as_posix()
            image_id = image_id_from_path(rel)
            try:
                attributes, ok, reason = parse_utkface_name(f.name), True, ""
            except ValueError as err:
                attributes, ok, reason = {}, False, str(err)
            rows.append(listing_row(image_id, rel, image_id, attributes, ok, reason))
        if not rows:
            raise SourceError(f"no images under {root}")
        return listing_frame(rows)
