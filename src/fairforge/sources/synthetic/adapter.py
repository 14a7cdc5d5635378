"""The synthetic world as a source (``synthetic``): the embedded procedural faces, listed
from the seed and rendered shard by shard (:mod:`fairforge.sources.synthetic`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from fairforge.sources.base import (
    ADAPTERS,
    SourceAdapter,
    listing_frame,
    listing_row,
    require_columns,
)
from fairforge.sources.synthetic.defaults import synthetic_options
from fairforge.sources.synthetic.listing import render_listed, synthetic_listing, synthetic_sources

SYNTHETIC_BASE_COLUMNS = ("image_id", "subject_id", "path")
SYNTHETIC_SUBDIR = "source_images"


@ADAPTERS.register("synthetic")
class Synthetic(SourceAdapter):
    """The embedded procedural faces, rendered into ``root`` (options go to the renderer,
    over :data:`~fairforge.sources.synthetic.SYNTHETIC_DEFAULTS`). ``render=False`` lists
    them only; the workflow renders them shard by shard (:meth:`prepare_shard`)."""

    default_group_by = ("tone", "gender")
    writes_images = True
    synthetic = True

    def resolve_root(self, name: str, dataset_cfg: Mapping, results_dir: str | Path) -> Path:
        return Path(results_dir) / name / SYNTHETIC_SUBDIR

    def listing_options(self, name: str, dataset_cfg: Mapping) -> dict:
        return {**super().listing_options(name, dataset_cfg), "render": False}

    def count_items(self, name: str, dataset_cfg: Mapping) -> int:
        o = synthetic_options(dataset_cfg.get("options"))
        return (
            len(o["tones"])
            * len(o["genders"])
            * int(o["subjects_per_group"])
            * int(o["images_per_subject"])
        )

    def list(self, root: Path, *, seed: int = 0, render: bool = True, **options) -> pd.DataFrame:
        options = synthetic_options(options)
        table = (
            synthetic_sources(root, seed=seed, **options)
            if render
            else synthetic_listing(seed=seed, **options)
        )
        require_columns(table, SYNTHETIC_BASE_COLUMNS, "synthetic renderer output")
        attribute_cols = [c for c in table.columns if c not in SYNTHETIC_BASE_COLUMNS]
        rows = [
            listing_row(
                str(rec["image_id"]),
                Path(rec["path"]).as_posix(),
                rec["subject_id"],
                {c: rec[c] for c in attribute_cols},
            )
            for rec in table.to_dict("records")
        ]
        return listing_frame(rows)

    def prepare_shard(
        self, rows: pd.DataFrame, root: Path, *, seed: int, name: str, dataset_cfg: Mapping
    ) -> None:
        render_listed(rows, root, seed=seed, **synthetic_options(dataset_cfg.get("options")))
