"""FairFace (``fairface``): images with label csvs ``file,age,gender,race,service_test``.

FairFace has no identities, so each image is its own subject.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from fairforge.sources.base import (
    ADAPTERS,
    SourceAdapter,
    SourceError,
    configured_root,
    count_csv_rows,
    image_id_from_path,
    listing_frame,
    listing_row,
    require_columns,
)

FAIRFACE_COLUMNS = ("file", "age", "gender", "race")


def fairface_label_files(root: Path, labels: str | Sequence[str] | None) -> list[Path]:
    """The label csvs: ``labels`` (one name or a list, relative to ``root``), else every
    ``fairface_label_*.csv`` in ``root``."""
    if labels is None:
        return sorted(root.glob("fairface_label_*.csv"))
    # One name, as the config documents it, is not a sequence of one-letter names.
    names = [labels] if isinstance(labels, (str, Path)) else list(labels)
    return [root / x for x in names]


@ADAPTERS.register("fairface")
class FairFace(SourceAdapter):
    """FairFace: label csvs ``file,age,gender,race,service_test`` with ``file`` relative to
    ``root``. ``labels`` names the csvs (default: every ``fairface_label_*.csv`` in root).
    Each image is its own subject (FairFace has no identities). Its faces were cropped and
    aligned by dlib's ``get_face_chip`` (padding 0.25 or 1.25, the release's README): the
    release's aligned crops."""

    default_group_by = ("race",)
    aligned_release = True

    def count_items(self, name: str, dataset_cfg: Mapping) -> int:
        root = configured_root(name, dataset_cfg)
        labels = (dataset_cfg.get("options") or {}).get("labels")
        files = fairface_label_files(root, labels)
        missing = [str(f) for f in files if not f.is_file()]
        if missing or not files:
            raise FileNotFoundError(
                f"config: datasets.{name}: FairFace label csv not found: "
                f"{missing or root / 'fairface_label_*.csv'}"
            )
        return sum(count_csv_rows(f) for f in files)

    def list(
        self, root: Path, *, seed: int = 0, labels: str | Sequence[str] | None = None
    ) -> pd.DataFrame:
        files = fairface_label_files(root, labels)
        if not files:
            raise SourceError(f"no FairFace label csv (fairface_label_*.csv) in {root}")
        rows = []
        for csv in files:
            if not csv.is_file():
                raise SourceError(f"FairFace label csv not found: {csv}")
            table = pd.read_csv(csv, dtype=str, keep_default_na=False)
            require_columns(table, FAIRFACE_COLUMNS, f"FairFace labels {csv}")
            extra = [c for c in ("service_test",) if c in table.columns]
            for rec in table[list(FAIRFACE_COLUMNS) + extra].to_dict("records"):
                rel = rec["file"].strip()
                image_id = image_id_from_path(rel)
                empty = [k for k in ("age", "gender", "race") if not rec[k].strip()]
                attributes = {
                    "age": rec["age"].strip(),
                    "gender": rec["gender"].strip().lower(),
                    "race": rec["race"].strip(),
                }
                if "service_test" in rec:
                    attributes["service_test"] = rec["service_test"].strip().lower() == "true"
                reason = f"missing label(s) {empty} in {csv.name}" if empty else ""
                rows.append(listing_row(image_id, rel, image_id, attributes, not empty, reason))
        return listing_frame(rows)
