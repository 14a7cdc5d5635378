"""Parquet manifests: deterministic writes, and the columns every stage promises.

A row is never dropped: failures stay with ``ok=False`` and a ``reason``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fairforge.columns import CONTRACTS

# Streaming reads take pages through a small buffer (not a row group's whole column chunks)
# and decode this many rows at a time, on one thread (parallel column decoding holds several
# batches at once): faces and pairs are written in pyarrow's default row groups of up to a
# million rows, which a shard job must never hold whole.
STREAM_BUFFER_BYTES = 1 << 20
STREAM_BATCH_ROWS = 4096


class ManifestError(ValueError):
    pass


def check_columns(table: pd.DataFrame | Iterable[str], contract: str, where: str = "") -> None:
    """Fail with the contract's columns when ``table`` (a frame, or a file's column names)
    lacks some, so a stage reports a wrong input by name instead of a KeyError later."""
    names = set(table.columns if isinstance(table, pd.DataFrame) else table)
    missing = [c for c in CONTRACTS[contract] if c not in names]
    if missing:
        raise ManifestError(
            f"{where or contract} manifest lacks column(s) {missing}; "
            f"the {contract} contract needs {list(CONTRACTS[contract])}"
        )


def write_manifest(
    df: pd.DataFrame,
    path: str | Path,
    contract: str | None = None,
    row_group_size: int | None = None,
) -> None:
    """Write ``df`` as parquet, byte-identical for identical frames (no index, fixed options).

    ``row_group_size`` = the shard size lets :func:`read_rows` load one shard alone.
    """
    if contract:
        check_columns(df, contract, str(path))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(df.reset_index(drop=True), preserve_index=False)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(
        table, tmp, compression="zstd", write_statistics=False, row_group_size=row_group_size
    )
    tmp.replace(path)


def _open(path: str | Path, contract: str | None = None, stream: bool = False) -> pq.ParquetFile:
    """The manifest at ``path``, checked against ``contract`` from its schema alone, so a
    reader of a few columns or rows still learns that the file breaks the contract."""
    path = Path(path)
    if not path.is_file():
        raise ManifestError(f"manifest not found: {path}")
    options = {"buffer_size": STREAM_BUFFER_BYTES, "pre_buffer": False} if stream else {}
    source = pq.ParquetFile(path, **options)
    if contract:
        check_columns(source.schema_arrow.names, contract, str(path))
    return source


def read_manifest(
    path: str | Path, contract: str | None = None, columns: Iterable[str] | None = None
) -> pd.DataFrame:
    _open(path, contract)
    return pd.read_parquet(path, columns=list(columns) if columns is not None else None)


def read_table(path: str | Path, columns: Iterable[str]) -> pa.Table:
    """``columns`` of every row as an arrow table: for a whole-manifest look at a few columns
    without a Python object per value."""
    return _open(path).read(columns=list(columns))


def columns_in(path: str | Path, names: Iterable[str]) -> list[str]:
    """Those of ``names`` the manifest has, in order: optional columns (e.g. video_id) to read
    when present, learned without reading any rows."""
    have = set(_open(path).schema_arrow.names)
    return [n for n in names if n in have]


def read_rows(
    path: str | Path, start: int, stop: int, columns: Iterable[str] | None = None
) -> pd.DataFrame:
    """Rows ``start:stop`` of a manifest, decoding only the row groups that hold them, so a
    shard job's memory follows the shard, not the dataset."""
    source = _open(path)
    columns = list(columns) if columns is not None else None
    groups, offset, first = [], 0, None
    for i in range(source.num_row_groups):
        n = source.metadata.row_group(i).num_rows
        if offset < stop and offset + n > start:
            groups.append(i)
            first = offset if first is None else first
        offset += n
    if not groups:
        empty = source.schema_arrow.empty_table()
        return (empty if columns is None else empty.select(columns)).to_pandas()
    table = source.read_row_groups(groups, columns=columns)
    return table.slice(start - first, stop - start).to_pandas()


def read_ids(
    path: str | Path,
    ids: Iterable,
    columns: Iterable[str] | None = None,
    id_column: str = "image_id",
    contract: str | None = None,
) -> pd.DataFrame:
    """The rows whose ``id_column`` is in ``ids``, in file order.

    Small batches are filtered as they are decoded, so memory follows the rows asked for (a
    shard and its targets), not the manifest, whatever its row groups. Every batch is decoded:
    manifests are written without statistics, so there is no row group to skip.
    """
    source = _open(path, contract, stream=True)
    schema = source.schema_arrow
    names = list(columns) if columns is not None else schema.names
    read = list(dict.fromkeys([*names, id_column]))
    wanted = pa.array(list(dict.fromkeys(ids)), type=schema.field(id_column).type)
    batches = source.iter_batches(STREAM_BATCH_ROWS, columns=read, use_threads=False)
    kept = (
        [batch.filter(pc.is_in(batch.column(id_column), value_set=wanted)) for batch in batches]
        if len(wanted)
        else []
    )
    projected = pa.schema([schema.field(c) for c in read], metadata=schema.metadata)
    return pa.Table.from_batches(kept, schema=projected).select(names).to_pandas()


def concat_manifests(paths: Iterable[str | Path], contract: str | None = None) -> pd.DataFrame:
    frames = [read_manifest(p, contract) for p in paths]
    if not frames:
        raise ManifestError("no manifests to concatenate")
    # an empty shard (no clip starts there, no study image in it) has untyped columns that
    # would turn the others' into objects
    return pd.concat([f for f in frames if len(f)] or frames[:1], ignore_index=True)
