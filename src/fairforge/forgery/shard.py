"""Run one forgery method over a shard of the pairs table: images, masks and manifest rows."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..columns import FORGERY_COLUMNS
from ..faces.attributes import SOURCE_META, faces_with_attributes
from ..images import ImageError, read_image, write_image
from ..manifest import columns_in, read_ids, read_manifest
from ..pairs import NO_TARGET
from ..seeding import rng_for
from ..sharding import read_shard
from ..sources.base import real_only
from .base import FORGERY_METHODS, ForgeryError, as_landmarks, create_method, method_key

# What forge_shard reads of the pairs and faces manifests, so a shard job loads nothing else
# (faces also need subject_id, group and split, joined from the sources).
PAIR_INPUTS = ["image_id", "target_image_id", "source_subject", "group", "split", "ok", "reason"]
FACE_INPUTS = ["image_id", "ok", "reason", "crop_path", "landmarks"]


def sample_id_for(method: str, image_id: str) -> str:
    return f"{method}__{image_id}"


def file_stem(sample_id: str) -> str:
    """A file-name-safe stem; ids with other characters get a short hash to stay unique."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", sample_id)
    if safe != sample_id:
        safe += "-" + hashlib.blake2b(sample_id.encode(), digest_size=4).hexdigest()
    return safe


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _unpaired(image_id: str, faces: pd.DataFrame) -> dict[str, Any]:
    """A pairs-like record for an image the pairs table lacks, with the reason why."""
    if image_id not in faces.index:
        return {"image_id": image_id, "ok": False, "reason": f"no face record for image {image_id}"}
    face = faces.loc[image_id]
    reason = (
        f"face not usable: {face.get('reason', '')}"
        if not bool(face["ok"])
        else "image missing from the pairs table"
    )
    return {
        "image_id": image_id,
        "target_image_id": None,
        "source_subject": face.get("subject_id"),
        "group": face.get("group"),
        "split": face.get("split"),
        "ok": False,
        "reason": reason,
    }


NEIGHBOURS = 5  # Face X-ray's target: one of this many nearest faces, at random


def target_choice(method: str, backend: str = "classical") -> str:
    """``"pair"`` or ``"nearest"``: where ``method``'s target face comes from."""
    return FORGERY_METHODS.metadata(method_key(method, backend))["target_choice"]


def nearest_targets(
    faces: pd.DataFrame,
    ids: Iterable[str],
    seed: int,
    method: str,
    neighbours: int = NEIGHBOURS,
) -> dict[str, str | None]:
    """For each source image id, a face of another subject in the same group and split
    whose landmarks are among the ``neighbours`` nearest to the source's (mean point
    distance over the 68, in crop pixels: the crops are aligned), one of them drawn with
    ``rng_for(seed, method, "target", image_id)``; None where the pool has no other subject.

    ``faces`` is indexed by image_id and has ok, landmarks, subject_id and group (split
    optional).
    """
    usable = faces[faces["ok"].astype(bool)]
    split = usable["split"] if "split" in usable.columns else pd.Series(None, usable.index)
    pool = usable["group"].astype(str) + "/" + split.astype(str)
    subject = usable["subject_id"].astype(str)
    lms = np.stack([as_landmarks(v) for v in usable["landmarks"]]) if len(usable) else None
    index = {i: k for k, i in enumerate(usable.index)}
    out: dict[str, str | None] = {}
    for image_id in ids:
        k = index.get(image_id)
        if k is None:
            out[image_id] = None
            continue
        cand = np.flatnonzero(
            (pool.to_numpy() == pool.iloc[k]) & (subject.to_numpy() != subject.iloc[k])
        )
        if len(cand) == 0:
            out[image_id] = None
            continue
        dist = np.linalg.norm(lms[cand] - lms[k], axis=2).mean(1)
        order = cand[np.lexsort((usable.index.to_numpy()[cand], dist))][:neighbours]
        pick = rng_for(seed, method, "target", image_id).integers(len(order))
        out[image_id] = str(usable.index[order[pick]])
    return out


def forge_shard(
    method_name: str,
    backend: str,
    pairs_df: pd.DataFrame,
    faces_df: pd.DataFrame,
    results_dir: str | Path,
    out_rel_dir: str,
    seed: int,
    options: dict[str, Any] | None = None,
    source_ids: Iterable[str] | None = None,
    crops_dir: str | Path | None = None,
) -> pd.DataFrame:
    """Forge every pair of ``pairs_df`` with one method; return forgery-manifest rows.

    ``pairs_df`` is (a shard of) :func:`fairforge.pairs.make_pairs`; ``faces_df`` gives
    crop_path (relative to ``crops_dir``, default ``results_dir``), landmarks and ok per
    image_id. Each sample uses ``rng_for(seed, method_name, image_id)``. Fakes go to
    ``{out_rel_dir}/{stem}.png`` (paths relative to ``results_dir``), masks to
    ``{stem}_mask.png``, image extras (crop-sized arrays, e.g. the X-ray map) to
    ``{stem}_{name}.png`` with a ``{name}_path`` column; other extras go to ``params`` as
    JSON. Failures stay as ok=False rows with the reason.

    ``source_ids`` (the shard's images) gives one row per id, also for images that are not in
    the pairs table because their face failed (reason ``face not usable: ...``).
    """
    method = create_method(method_name, backend, **(options or {}))
    results_dir = Path(results_dir)
    crops_dir = Path(crops_dir) if crops_dir is not None else results_dir
    faces = faces_df.assign(image_id=faces_df["image_id"].astype(str)).set_index("image_id")
    if not faces.index.is_unique:
        raise ValueError("faces table has duplicate image_id values")

    @lru_cache(maxsize=64)  # targets repeat within a subject; keep a few decoded crops
    def load(image_id: str) -> tuple[np.ndarray, np.ndarray]:
        if image_id not in faces.index:
            raise ForgeryError(f"no face record for image {image_id}")
        rec = faces.loc[image_id]
        if not bool(rec["ok"]):
            raise ForgeryError(f"face not usable: {rec.get('reason', '')}")
        return read_image(crops_dir / str(rec["crop_path"])), as_landmarks(rec["landmarks"])

    pairs = {str(r["image_id"]): r for r in pairs_df.to_dict("records")}
    ids = sorted(pairs) if source_ids is None else sorted({str(i) for i in source_ids})
    nearest = (
        nearest_targets(faces, ids, seed, method_name)
        if method.needs_target and method.target_choice == "nearest"
        else None
    )
    rows: list[dict[str, Any]] = []
    extra_columns: set[str] = set()
    for image_id in ids:
        rec = pairs.get(image_id) or _unpaired(image_id, faces)
        sample_id = sample_id_for(method_name, image_id)
        target = rec.get("target_image_id")
        target_id = (None if _missing(target) else str(target)) if method.needs_target else image_id
        if nearest is not None:
            target_id = nearest.get(image_id)
        row: dict[str, Any] = {
            "sample_id": sample_id,
            "method": method_name,
            "backend": method.backend,
            "image_id": image_id,
            "target_image_id": target_id,
            "path": None,
            "mask_path": None,
            "group": rec.get("group"),
            "subject_id": rec.get("source_subject", rec.get("subject_id")),
            "split": None if _missing(rec.get("split")) else rec.get("split"),
            "ok": False,
            "reason": "",
            "params": None,
        }
        rows.append(row)
        if nearest is not None:
            if target_id is None:
                usable = image_id in faces.index and bool(faces.loc[image_id, "ok"])
                row["reason"] = (
                    f"{NO_TARGET} (no face of another subject to blend)"
                    if usable
                    else rec.get("reason") or f"no face record for image {image_id}"
                )
                continue
        elif method.needs_target and (target_id is None or not bool(rec.get("ok", True))):
            row["reason"] = rec.get("reason") or NO_TARGET
            continue
        try:
            source_img, source_lm = load(image_id)
            target_img, target_lm = load(target_id) if method.needs_target else (None, None)
            result = method(
                source_img, source_lm, target_img, target_lm, rng_for(seed, method_name, image_id)
            )
        except (ForgeryError, ImageError) as err:
            row["reason"] = str(err)
            continue
        stem = f"{out_rel_dir}/{file_stem(sample_id)}"
        write_image(results_dir / f"{stem}.png", result.image)
        write_image(results_dir / f"{stem}_mask.png", result.mask)
        params = {}
        for key, value in sorted(result.extra.items()):
            if isinstance(value, np.ndarray) and value.shape[:2] == result.mask.shape:
                rel = f"{stem}_{key}.png"
                write_image(results_dir / rel, value.astype(np.uint8))
                row[f"{key}_path"] = rel
                extra_columns.add(f"{key}_path")
            else:
                params[key] = _jsonable(value)
        row.update(
            path=f"{stem}.png",
            mask_path=f"{stem}_mask.png",
            ok=True,
            params=json.dumps(params, sort_keys=True),
        )
    columns = FORGERY_COLUMNS + sorted(extra_columns)
    out = pd.DataFrame(rows, columns=columns)
    out["ok"] = out["ok"].astype(bool)
    return out


def read_forgery_shard(
    sources: str | Path,
    faces: str | Path,
    pairs: str | Path,
    shard: str,
    shard_size: int,
    method: str | None = None,
    backend: str = "classical",
) -> tuple[list[str], pd.DataFrame, pd.DataFrame]:
    """The shard's image ids, their pairs rows, and the faces of them and of their targets
    (which may lie in any shard) with subject, group and split: what one forgery job uses,
    read alone, so its memory follows the shard, not the dataset."""
    # The shard's real images: a labelled dataset's own fakes are no forgery's source.
    rows = read_shard(sources, shard, shard_size, ["image_id", *columns_in(sources, ["label"])])
    ids = real_only(rows)["image_id"].tolist()
    return ids, *read_forgery_inputs(sources, faces, pairs, ids, method, backend)


def read_forgery_inputs(
    sources: str | Path,
    faces: str | Path,
    pairs: str | Path,
    ids: list[str],
    method: str | None = None,
    backend: str = "classical",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pairs rows of source images ``ids`` and the faces of them and of their targets,
    with subject, group and split. For a ``method`` whose target is the nearest face
    (:func:`target_choice`), every real face is read: the candidates are the whole group."""
    shard_pairs = read_ids(pairs, ids, PAIR_INPUTS, contract="pairs")
    wanted = sorted({*ids, *shard_pairs["target_image_id"].dropna()})
    if method is not None and target_choice(method, backend) == "nearest":
        every = read_manifest(
            sources, contract="sources", columns=["image_id", *columns_in(sources, ["label"])]
        )
        wanted = sorted(real_only(every)["image_id"].astype(str))
    shard_faces = faces_with_attributes(
        read_ids(sources, wanted, SOURCE_META, contract="sources"),
        read_ids(faces, wanted, FACE_INPUTS, contract="faces"),
    )
    return shard_pairs, shard_faces
