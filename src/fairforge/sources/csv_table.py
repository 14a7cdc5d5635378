"""Any csv of images (``csv``): ``path, subject_id, group`` and attributes, optionally the
label columns of real and fake images."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from fairforge.sources.base import (
    ADAPTERS,
    CSV_LABEL_COLUMNS,
    SourceAdapter,
    SourceError,
    configured_root,
    count_csv_rows,
    csv_methods,
    image_id_from_path,
    image_root,
    listing_frame,
    listing_row,
    relative_or_absolute,
    require_columns,
    with_csv_labels,
)

CSV_COLUMNS = ("path", "subject_id", "group")


@ADAPTERS.register("csv")
class CsvTable(SourceAdapter):
    """Any csv with ``path, subject_id, group`` (+ optional ``image_id`` and extra attribute
    columns). The config's ``root`` is the csv file, or a folder with ``options.table``
    naming the csv in it. Relative paths start at the csv's folder; absolute paths are kept.

    A csv of real and fake images adds ``label`` (0 real, 1 fake) and/or ``method`` ('real'
    for a real image, the manipulation of a fake), and optionally ``source_subject`` and
    ``target_subject`` (the identities a fake was made from; its ``subject_id`` is the
    identity it shows); the listing then carries :data:`~fairforge.columns.LABEL_COLUMNS`.
    """

    def resolve_root(self, name: str, dataset_cfg: Mapping, results_dir: str | Path) -> Path:
        return image_root(configured_root(name, dataset_cfg))

    def listing_options(self, name: str, dataset_cfg: Mapping) -> dict:
        options = super().listing_options(name, dataset_cfg)
        csv = self.table_path(name, dataset_cfg)
        # The listing runs on the folder the paths start from (the root the other stages
        # get), so the file form names its csv the way the folder form does.
        options.setdefault("table", csv.name)
        return options

    def count_items(self, name: str, dataset_cfg: Mapping) -> int:
        return count_csv_rows(self.table_path(name, dataset_cfg))

    def imported_methods(self, name: str, dataset_cfg: Mapping) -> list[str] | None:
        try:
            csv = self.table_path(name, dataset_cfg)
        except (FileNotFoundError, ValueError):
            return None
        return csv_methods(csv)

    def table_path(self, name: str, dataset_cfg: Mapping) -> Path:
        """The csv a dataset block names: ``root`` itself, or ``root/options.table``."""
        root = configured_root(name, dataset_cfg)
        table = (dataset_cfg.get("options") or {}).get("table")
        if root.is_file():
            if table:
                raise ValueError(
                    f"config: datasets.{name}: root {root} is the csv file; "
                    "options.table is for a folder root"
                )
            return root
        if not table:
            raise FileNotFoundError(
                f"config: datasets.{name}.root: csv not found: {root} "
                "(give the csv file, or a folder and options.table)"
            )
        csv = root / table
        if not csv.is_file():
            raise FileNotFoundError(f"config: datasets.{name}: csv not found: {csv}")
        return csv

    def list(self, root: Path, *, seed: int = 0, table: str | None = None) -> pd.DataFrame:
        csv = root / table if table else root
        if not csv.is_file():
            raise SourceError(f"csv table not found: {csv}")
        folder = image_root(root)
        frame = pd.read_csv(csv, dtype=str, keep_default_na=False)
        require_columns(frame, CSV_COLUMNS, f"csv table {csv}")
        labelled = bool({"label", "method"} & set(frame.columns))
        attribute_cols = [
            c
            for c in frame.columns
            if c not in ("path", "subject_id", "image_id") + CSV_LABEL_COLUMNS
        ]
        rows = []
        for rec in frame.to_dict("records"):
            raw = Path(rec["path"].strip())
            full = raw if raw.is_absolute() else csv.parent / raw
            rel = relative_or_absolute(full, folder)
            image_id = rec.get("image_id", "").strip() or image_id_from_path(rel)
            attributes = {c: rec[c] for c in attribute_cols}
            empty = [c for c in CSV_COLUMNS if not rec[c].strip()]
            reason = f"empty value(s) in {empty}" if empty else ""
            row = listing_row(
                image_id, rel, rec["subject_id"].strip() or image_id, attributes, not empty, reason
            )
            if labelled:
                row = with_csv_labels(row, rec)
            rows.append(row)
        return listing_frame(rows)
