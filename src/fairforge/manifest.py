"""Parquet manifests: deterministic writes, and the columns every stage promises.

A row is never dropped: failures stay with ``ok=False`` and a ``reason``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

# Required columns of each contract (DESIGN.md section 2). Extra columns are allowed.
CONTRACTS: dict[str, tuple[str, ...]] = {
    "sources": ("image_id", "dataset", "path", "subject_id", "group", "split",
                "width", "height", "sha256", "ok", "reason"),
    "faces": ("image_id", "ok", "reason", "bbox", "det_score", "landmarks", "crop_path",
              "detector"),
    "pairs": ("image_id", "target_image_id", "source_subject", "target_subject", "group"),
    "forgery": ("sample_id", "method", "backend", "image_id", "target_image_id", "path",
                "mask_path", "group", "subject_id", "split", "ok", "reason"),
    "samples": ("sample_id", "dataset", "split", "label", "method", "group", "subject_id",
                "path"),
    "predictions": ("sample_id", "dataset", "split", "label", "method", "group",
                    "subject_id", "detector", "variant", "score"),
}


class ManifestError(ValueError):
    pass


def check_columns(df: pd.DataFrame, contract: str, where: str = "") -> None:
    missing = [c for c in CONTRACTS[contract] if c not in df.columns]
    if missing:
        raise ManifestError(
            f"{where or contract} manifest lacks column(s) {missing}; "
            f"the {contract} contract needs {list(CONTRACTS[contract])}")


def write_manifest(df: pd.DataFrame, path: str | Path, contract: str | None = None,
                   row_group_size: int | None = None) -> None:
    """Write ``df`` as parquet, byte-identical for identical frames (no index, fixed options).

    ``row_group_size`` = the shard size lets :func:`read_rows` load one shard alone.
    """
    if contract:
        check_columns(df, contract, str(path))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(df.reset_index(drop=True), preserve_index=False)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp, compression="zstd", write_statistics=False,
                   row_group_size=row_group_size)
    tmp.replace(path)


def read_manifest(path: str | Path, contract: str | None = None,
                  columns: Iterable[str] | None = None) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise ManifestError(f"manifest not found: {path}")
    df = pd.read_parquet(path, columns=list(columns) if columns else None)
    if contract and columns is None:
        check_columns(df, contract, str(path))
    return df


def read_rows(path: str | Path, start: int, stop: int) -> pd.DataFrame:
    """Rows ``start:stop`` of a manifest, decoding only the row groups that hold them, so a
    shard job's memory follows the shard, not the dataset."""
    path = Path(path)
    if not path.is_file():
        raise ManifestError(f"manifest not found: {path}")
    source = pq.ParquetFile(path)
    groups, offset, first = [], 0, None
    for i in range(source.num_row_groups):
        n = source.metadata.row_group(i).num_rows
        if offset < stop and offset + n > start:
            groups.append(i)
            first = offset if first is None else first
        offset += n
    if not groups:
        return source.schema_arrow.empty_table().to_pandas()
    table = source.read_row_groups(groups)
    return table.slice(start - first, stop - start).to_pandas()


def concat_manifests(paths: Iterable[str | Path], contract: str | None = None) -> pd.DataFrame:
    frames = [read_manifest(p, contract) for p in paths]
    if not frames:
        raise ManifestError("no manifests to concatenate")
    return pd.concat(frames, ignore_index=True)
