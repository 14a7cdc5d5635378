"""VGGFace2 (``vggface2``): identity folders ``n000001/`` with a demographic labels csv;
real images only, for the ranking study."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from fairforge.sources.base import (
    ADAPTERS,
    SourceAdapter,
    SourceError,
    image_id_from_path,
    iter_images,
    listing_frame,
    listing_row,
    subdirs,
)

VGGFACE2_SETS = ("train", "test")
VGGFACE2_META = "identity_meta.csv"
# The identity column of a labels csv: the release's identity_meta.csv says Class_ID.
VGGFACE2_ID_COLUMNS = ("Class_ID", "class_id", "id", "subject_id", "identity")
_VGG_IDENTITY = re.compile(r"^n\d{6}$")
VGGFACE2_GENDER = {"m": "male", "f": "female"}


def vggface2_labels(root: Path, labels: str | None) -> Path:
    """The demographic labels csv: ``labels`` (relative to ``root`` or absolute), else the
    release's ``identity_meta.csv`` in ``root`` or ``root/meta``."""
    if labels:
        path = Path(labels) if Path(labels).is_absolute() else root / labels
        if not path.is_file():
            raise SourceError(f"VGGFace2 labels csv not found: {path}")
        return path
    for path in (root / VGGFACE2_META, root / "meta" / VGGFACE2_META):
        if path.is_file():
            return path
    raise SourceError(
        f"no VGGFace2 labels: give options.labels (a csv of Class_ID and attributes) or put "
        f"the release's {VGGFACE2_META} in {root} or {root / 'meta'}"
    )


def read_identity_labels(path: Path) -> dict[str, dict[str, str]]:
    """Identity -> attributes of a VGGFace2 labels csv (header names and values stripped,
    ``Gender`` m/f as ``gender`` male/female)."""
    table = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    table.columns = [c.strip() for c in table.columns]
    id_col = next((c for c in VGGFACE2_ID_COLUMNS if c in table.columns), None)
    if id_col is None:
        raise SourceError(
            f"VGGFace2 labels {path} lacks an identity column (one of {VGGFACE2_ID_COLUMNS}); "
            f"it has {list(table.columns)}"
        )
    out = {}
    for rec in table.to_dict("records"):
        identity = rec.pop(id_col).strip()
        attributes = {k.lower() if k == "Gender" else k: v.strip() for k, v in rec.items()}
        if "gender" in attributes:
            g = attributes["gender"].lower()
            attributes["gender"] = VGGFACE2_GENDER.get(g, g)
        out[identity] = attributes
    return out


@ADAPTERS.register("vggface2")
class VGGFace2(SourceAdapter):
    """VGGFace2 in its released layout: identity folders ``n000001/0001_01.jpg`` under
    ``{root}/train`` and ``{root}/test`` (or directly under ``root``), with a demographic
    labels csv: option ``labels`` (``Class_ID`` or ``id`` and attribute columns such as
    ``race``, ``gender``), default the release's ``identity_meta.csv`` (its ``Gender`` m/f
    becomes ``gender`` male/female). An identity the csv does not label keeps its images as
    rows with ``ok=False`` and the reason. ``split: official`` is the release's train/test
    folders (its identities are disjoint). Real images only: for the ranking study."""

    default_group_by = ("gender",)

    def list(self, root: Path, *, seed: int = 0, labels: str | None = None) -> pd.DataFrame:
        sets = [root / s for s in VGGFACE2_SETS if (root / s).is_dir()] or [root]
        notes = read_identity_labels(vggface2_labels(root, labels))
        rows = []
        for base in sets:
            for identity in subdirs(base):
                if not _VGG_IDENTITY.match(identity.name):
                    continue
                attributes = notes.get(identity.name)
                reason = "" if attributes is not None else "identity not in the labels csv"
                for f in iter_images(identity):
                    rel = f.relative_to(root).as_posix()
                    row = listing_row(
                        image_id_from_path(rel),
                        rel,
                        identity.name,
                        attributes or {},
                        attributes is not None,
                        reason,
                    )
                    rows.append(row)
        if not rows:
            raise SourceError(
                f"no VGGFace2 identity folders (n000001/...) under {root} or {root}/train, "
                f"{root}/test"
            )
        return listing_frame(rows)

    def official_split(self, listing: pd.DataFrame, root: Path, **options) -> pd.Series:
        first = listing["path"].astype(str).str.split("/").str[0]
        if not first.isin(VGGFACE2_SETS).all():
            raise SourceError(
                f"split: official needs VGGFace2's train/ and test/ folders under {root}"
            )
        return first.astype(object)
