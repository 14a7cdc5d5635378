"""The sources manifest: an adapter's listing with groups and subject-level splits
(:func:`list_sources`, files unopened), then what each file says (:func:`inspect_sources`),
which the workflow runs shard by shard; :func:`build_sources` does both at once.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.columns import (
    LABEL_COLUMNS,
    LISTING_COLUMNS,
    SOURCE_COLUMNS,
    VIDEO_FRAME_COLUMNS,
    VIDEO_SOURCE_COLUMNS,
)
from fairforge.images import DEFAULT_LIMITS, ImageError, ImageLimits, decode_image, read_file
from fairforge.sources.base import (
    ADAPTERS,
    REAL_METHOD,
    SourceError,
    image_root,
    require_columns,
)
from fairforge.sources.split import (
    SplitError,
    SplitSpec,
    carve_val,
    check_subject_disjoint,
    listed_split,
    most_frames,
    parse_split,
    ratio_frames,
    read_split_files,
    split_rows,
    thin_frames,
)

DEFAULT_SPLIT = {"train": 0.6, "val": 0.2, "test": 0.2}


def inspect_image_file(
    path: Path, limits: ImageLimits = DEFAULT_LIMITS
) -> tuple[int, int, str, bool, str]:
    """(width, height, sha256, ok, reason) of one file, decoding it once (width and height
    as the stages see the image: oriented, and reduced when over ``limits.reduce_above``)."""
    try:
        data = read_file(path)
    except ImageError as err:
        return 0, 0, "", False, str(err)
    digest = hashlib.sha256(data).hexdigest()
    try:
        rgb = decode_image(data, limits)
    except ImageError as err:
        return 0, 0, digest, False, str(err)
    return int(rgb.shape[1]), int(rgb.shape[0]), digest, True, ""


def group_of(attributes: Mapping[str, object], group_by: Sequence[str]) -> str:
    missing = [k for k in group_by if k not in attributes]
    if missing:
        raise SourceError(
            f"group_by attribute(s) {missing} not in the image attributes {sorted(attributes)}"
        )
    return "_".join(str(attributes[k]) for k in group_by)


def _json_default(value: object):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"attribute value {value!r} is not JSON serialisable")


def build_sources(
    adapter: str,
    root: str | Path,
    dataset: str,
    group_by: Sequence[str] | None = None,
    split_fractions: Mapping[str, float] | None = None,
    seed: int = 0,
    workers: int | None = None,
    limits: ImageLimits = DEFAULT_LIMITS,
    split: object = None,
    **adapter_options,
) -> pd.DataFrame:
    """The sources manifest of a dataset (columns :data:`SOURCE_COLUMNS`, sorted by image_id):
    :func:`list_sources`, then :func:`inspect_sources` on every row.

    ``group_by`` lists the attributes whose values, joined by '_', form the group (default:
    the adapter's, e.g. ``['race']`` for RFW, ``['tone', 'gender']`` for synthetic). Rows an
    adapter could not label keep ``ok=False``, an empty group and an empty split; rows whose
    file cannot be decoded keep their subject's split with ``ok=False`` and the reason.
    """
    listing = list_sources(
        adapter, root, dataset, group_by, split_fractions, seed, split=split, **adapter_options
    )
    return inspect_sources(listing, root, workers, limits)


def list_sources(
    adapter: str,
    root: str | Path,
    dataset: str,
    group_by: Sequence[str] | None = None,
    split_fractions: Mapping[str, float] | None = None,
    seed: int = 0,
    split: object = None,
    **adapter_options,
) -> pd.DataFrame:
    """Every image of a dataset with its subject, group, attributes and split, sorted by
    image_id, without opening the files: ``ok``/``reason`` say whether the adapter could
    label the image. :func:`inspect_sources` adds what the files say, shard by shard.

    ``split`` (the dataset's own ``split:``, over ``split_fractions``, the global one) is
    fractions, ``'test_only'``, ``'official'`` (the adapter's) or split files, with the
    options of :func:`~fairforge.sources.split.parse_split` (``subject_disjoint``,
    ``val_from_train``, ``frame_ratio``; also a ratio ``'14:1:1'``). A video adapter's
    ``frames_per_video`` may be given per split (``{train: 14, val: 1, test: 1}``:
    :func:`~fairforge.sources.split.thin_frames`). Fractions split by subject, keeping the
    identities of a fake together (by video where not subject-disjoint); a listed split is
    made subject-disjoint unless the spec or the dataset's own definition says otherwise
    (:func:`resolved_split`), and a row it cannot place keeps ``ok=False`` with the reason. A labelled dataset's
    :data:`LABEL_COLUMNS` are carried; a row whose label and method disagree is ``ok=False``.
    """
    source = ADAPTERS.create(adapter)
    root = Path(root)
    if not source.writes_images and not root.exists():
        raise SourceError(f"dataset root not found: {root}")
    group_by = list(group_by) if group_by else list(source.default_group_by)
    if split is None:
        split = dict(split_fractions) if split_fractions is not None else dict(DEFAULT_SPLIT)
    spec = resolved_split(adapter, split)
    # Frames per video per split: the adapter samples the most, the split then thins them.
    per_split = adapter_options.get("frames_per_video")
    if isinstance(per_split, Mapping):
        if spec.frame_ratio is not None:
            raise SplitError(
                "give frames_per_video per split or split.frame_ratio, not both: the ratio "
                "sets the frames per video of each split"
            )
        adapter_options = {**adapter_options, "frames_per_video": most_frames(per_split, 0)}

    listing = source.list(root, seed=seed, **adapter_options)
    require_columns(listing, LISTING_COLUMNS, f"adapter {adapter!r} output")
    if listing.empty:
        raise SourceError(f"adapter {adapter!r} found no images under {root}")
    dupes = listing["image_id"][listing["image_id"].duplicated()].unique().tolist()
    if dupes:
        raise SourceError(f"duplicate image ids {dupes[:5]} in {adapter!r} listing of {root}")

    labels = [c for c in LABEL_COLUMNS if c in listing.columns]
    if labels:
        listing = check_labels(listing)
    labelled = listing["ok"].to_numpy(bool)
    groups = [group_of(a, group_by) if ok else "" for a, ok in zip(listing["attributes"], labelled)]
    df = pd.DataFrame(
        {
            "image_id": listing["image_id"].astype(str).to_numpy(object),
            "dataset": dataset,
            "path": listing["path"].astype(str).to_numpy(object),
            "subject_id": listing["subject_id"].astype(str).to_numpy(object),
            "group": np.asarray(groups, dtype=object),
            "attributes": [
                json.dumps(a, sort_keys=True, default=_json_default) for a in listing["attributes"]
            ],
        }
    )
    for column in labels:
        df[column] = listing[column].to_numpy()
    for column in VIDEO_SOURCE_COLUMNS:
        if column in listing.columns:
            df[column] = listing[column].to_numpy()
    reasons = listing["reason"].astype(str).to_numpy(object)
    rows = np.full(len(df), "", dtype=object)
    disjoint = bool(spec.subject_disjoint)
    if labelled.any():
        part = df[labelled]
        if spec.fractions is not None:
            rows[labelled] = split_rows(part, spec.fractions, seed, disjoint).to_numpy(object)
        else:
            if spec.official:
                options = {**adapter_options, "seed": seed}
                given = source.official_split(listing[labelled], root, **options)
            else:
                subjects = read_split_files(spec.listed, image_root(root))
                given = part["subject_id"].map(subjects)
            placed, why = listed_split(part, pd.Series(np.asarray(given, dtype=object)), disjoint)
            placed = carve_val(part, placed.to_numpy(object), spec.val_from_train, seed, disjoint)
            rows[labelled] = placed.to_numpy(object)
            reasons[labelled] = np.asarray(why, dtype=object)
            labelled = labelled & (rows != "")
    df["split"] = rows
    df["ok"] = labelled
    df["reason"] = reasons
    # Columns in the order the manifest has always had them: labels, then the video's.
    df = df[
        [c for c in df.columns if c not in VIDEO_SOURCE_COLUMNS]
        + [c for c in VIDEO_SOURCE_COLUMNS if c in df.columns]
    ]
    if disjoint:
        # No identity is in two splits, whatever the split's form (the error names them).
        check_subject_disjoint(df[df["ok"]])
    if set(VIDEO_FRAME_COLUMNS) <= set(df.columns):
        if spec.frame_ratio is not None:
            per_split = ratio_frames(df, spec.frame_ratio)
        if isinstance(per_split, Mapping):
            df = thin_frames(df, per_split)
    elif spec.frame_ratio is not None:
        raise SplitError(f"split.frame_ratio is for videos; adapter {adapter!r} lists images")
    return df.sort_values("image_id", kind="mergesort").reset_index(drop=True)


def resolved_split(adapter: str, split: object) -> SplitSpec:
    """A dataset's split spec read (:func:`~fairforge.sources.split.parse_split`), with
    ``subject_disjoint`` resolved: as asked, else the adapter's own definition for its
    official split (Celeb-DF's is not subject-disjoint), else true."""
    spec = parse_split(split)
    if spec.subject_disjoint is not None:
        return spec
    official = spec.official and not ADAPTERS.create(adapter).official_subject_disjoint
    return replace(spec, subject_disjoint=not official)


def check_labels(listing: pd.DataFrame) -> pd.DataFrame:
    """A labelled listing whose rows with a label other than 0/1, a fake without a method or
    a real image with one are ``ok=False`` with the reason (nothing is dropped)."""
    out = listing.copy()
    ok = out["ok"].to_numpy(bool).copy()
    reasons = out["reason"].astype(str).to_numpy(object).copy()
    for i, (label, method) in enumerate(zip(out["label"], out["method"].astype(str))):
        why = ""
        if label not in (0, 1):
            why = f"label must be 0 (real) or 1 (fake), got {label!r}"
        elif label == 1 and method in ("", REAL_METHOD):
            why = "a fake needs its manipulation method"
        elif label == 0 and method != REAL_METHOD:
            why = f"a real image has method {REAL_METHOD!r}, got {method!r}"
        if why and ok[i]:
            ok[i], reasons[i] = False, why
    out["ok"], out["reason"] = ok, reasons
    return out


def inspect_sources(
    listing: pd.DataFrame,
    root: str | Path,
    workers: int | None = None,
    limits: ImageLimits = DEFAULT_LIMITS,
) -> pd.DataFrame:
    """Rows of :func:`list_sources` (all, or one shard) with each file's width, height and
    sha256; a file that cannot be read or decoded (:mod:`fairforge.images`, within
    ``limits``) makes its row ``ok=False`` with the reason (an adapter's own reason first)."""
    base = image_root(root)
    paths = [base / p for p in listing["path"]]
    n_workers = workers or min(8, os.cpu_count() or 1)
    if n_workers > 1 and len(paths) > 1:
        # Decoding and hashing release the GIL; map keeps the order.
        with ThreadPoolExecutor(n_workers) as pool:
            info = list(pool.map(lambda p: inspect_image_file(p, limits), paths))
    else:
        info = [inspect_image_file(p, limits) for p in paths]
    width, height, sha, file_ok, file_reason = zip(*info) if info else ([],) * 5
    df = listing.copy()
    df["width"] = np.asarray(width, dtype=np.int64)
    df["height"] = np.asarray(height, dtype=np.int64)
    df["sha256"] = np.asarray(sha, dtype=object)
    labelled = listing["ok"].to_numpy(bool)
    df["ok"] = labelled & np.asarray(file_ok, dtype=bool)
    df["reason"] = [
        lr if not lok else fr for lok, lr, fr in zip(labelled, listing["reason"], file_reason)
    ]
    video = [c for c in VIDEO_SOURCE_COLUMNS if c in listing.columns]
    labels = [c for c in LABEL_COLUMNS if c in listing.columns]
    return df.reset_index(drop=True)[list(SOURCE_COLUMNS) + video + labels]


def list_dataset(
    name: str,
    dataset_cfg: Mapping,
    root: str | Path,
    split: object,
    seed: int,
) -> pd.DataFrame:
    """:func:`list_sources` for one configured dataset (``split``: its resolved split, see
    :func:`list_sources`), checked against the shard plan: the plan made one shard job per
    ``shard_size`` rows of the adapter's count, so rows past it would belong to no job and
    vanish from every later stage."""
    adapter = ADAPTERS.create(dataset_cfg["adapter"])
    listing = list_sources(
        dataset_cfg["adapter"],
        root,
        name,
        group_by=dataset_cfg.get("group_by"),
        split=split,
        seed=seed,
        **adapter.listing_options(name, dataset_cfg),
    )
    planned = adapter.count_items(name, dataset_cfg)
    if len(listing) > planned:
        raise SourceError(
            f"datasets.{name}: {len(listing)} images listed but only {planned} "
            "planned; rerun so that the plan counts them again"
        )
    return listing
