"""Dataset adapters: list a dataset's images with subject ids and demographic attributes.

An adapter is a function ``adapter(root: Path, *, seed: int, **options) -> DataFrame`` that
returns one row per image with columns ``image_id``, ``path`` (relative to the dataset root,
or absolute), ``subject_id``, ``attributes`` (a dict), ``ok`` and ``reason``. A row whose
labels cannot be read (a malformed UTKFace name) stays with ``ok=False``.
:func:`build_sources` turns a listing into the sources manifest: it forms groups from the
attributes, splits by subject and reads every file once for its size and sha256.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, Mapping, Sequence

import cv2
import numpy as np
import pandas as pd

from fairforge.columns import LISTING_COLUMNS, SOURCE_COLUMNS, VIDEO_FRAME_COLUMNS
from fairforge.images import ImageError, to_rgb_uint8
from fairforge.sources.split import split_by_subject

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
DEFAULT_SPLIT = {"train": 0.6, "val": 0.2, "test": 0.2}


class SourceError(ValueError):
    """A dataset that cannot be listed as asked (layout, columns, options)."""


@dataclass(frozen=True)
class AdapterSpec:
    name: str
    fn: Callable[..., pd.DataFrame]
    default_group_by: tuple[str, ...]


_ADAPTERS: dict[str, AdapterSpec] = {}


def register_adapter(name: str, default_group_by: Sequence[str] = ("group",)):
    """Decorator registering ``fn(root, *, seed, **options) -> listing`` under ``name``."""
    def decorate(fn: Callable[..., pd.DataFrame]) -> Callable[..., pd.DataFrame]:
        _ADAPTERS[name] = AdapterSpec(name, fn, tuple(default_group_by))
        return fn
    return decorate


def list_adapters() -> list[str]:
    return sorted(_ADAPTERS)


def get_adapter(name: str) -> AdapterSpec:
    if name not in _ADAPTERS:
        raise SourceError(f"unknown adapter {name!r}; available: {list_adapters()}")
    return _ADAPTERS[name]


def image_root(root: str | Path) -> Path:
    """The folder that relative manifest paths start from (a csv file's folder for `csv`)."""
    root = Path(root)
    return root.parent if root.is_file() else root


# --------------------------------------------------------------------------------- helpers

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def image_id_from_path(rel_path: str | os.PathLike) -> str:
    """A file-name-safe id from a relative path: folders joined by '__', image suffixes
    dropped (UTKFace's ``.jpg.chip.jpg`` drops both), other characters mapped to '_'."""
    p = PurePosixPath(Path(rel_path).as_posix())
    name = p.name
    while True:
        stem, ext = os.path.splitext(name)
        if ext.lower() in IMAGE_SUFFIXES or (ext.lower() == ".chip" and stem):
            name = stem
        else:
            break
    parts = [x for x in (*p.parent.parts, name) if x not in ("", ".", "/")]
    return "__".join(_UNSAFE.sub("_", x) for x in parts)


def is_image_file(path: Path) -> bool:
    # Hidden files include macOS '._x.jpg' resource forks, which carry an image suffix.
    return path.suffix.lower() in IMAGE_SUFFIXES and not path.name.startswith(".")


def iter_images(folder: Path) -> list[Path]:
    """Image files below ``folder``, recursively, in a fixed (sorted) order."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found.extend(Path(dirpath) / f for f in sorted(filenames) if is_image_file(Path(f)))
    return sorted(found)


def subdirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def listing_row(image_id: str, path: str, subject_id: str, attributes: Mapping[str, object],
                ok: bool = True, reason: str = "") -> dict:
    return {"image_id": image_id, "path": path, "subject_id": str(subject_id),
            "attributes": dict(attributes), "ok": bool(ok), "reason": reason}


def listing_frame(rows: Iterable[dict]) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=list(LISTING_COLUMNS))


def folder_listing(base: Path, root: Path, group_dirs: Mapping[Path, Mapping[str, str]]
                   ) -> pd.DataFrame:
    """Rows for a ``{group}/{subject}/**/*.jpg`` tree; ids are relative to ``base``, paths to
    ``root`` (so ``{root}/data/{Race}`` and ``{root}/{Race}`` give the same ids)."""
    rows = []
    for group_dir, attributes in group_dirs.items():
        for subject_dir in subdirs(group_dir):
            for f in iter_images(subject_dir):
                rows.append(listing_row(image_id_from_path(f.relative_to(base)),
                                        f.relative_to(root).as_posix(), subject_dir.name,
                                        attributes))
    return listing_frame(rows)


def require_columns(table: pd.DataFrame, needed: Sequence[str], where: str) -> None:
    missing = [c for c in needed if c not in table.columns]
    if missing:
        raise SourceError(f"{where} lacks column(s) {missing}; it has {list(table.columns)}")


# --------------------------------------------------------------------------------- adapters

RFW_RACES = ("African", "Asian", "Caucasian", "Indian")


@register_adapter("rfw", default_group_by=("race",))
def rfw(root: Path, *, seed: int = 0, races: Sequence[str] = RFW_RACES) -> pd.DataFrame:
    """RFW: ``{root}/{Race}/{subject}/{image}.jpg``; the official archive's
    ``{root}/data/{Race}`` and ``{root}/test/data/{Race}`` layouts are found too.

    Every requested race must be present; pass ``races=[...]`` to use a subset.
    """
    candidates = [root, root / "data", root / "test" / "data"]
    base = next((c for c in candidates if any((c / r).is_dir() for r in races)), None)
    if base is None:
        raise SourceError(f"no RFW race folder ({', '.join(races)}) under {root}, "
                          f"{root / 'data'} or {root / 'test' / 'data'}")
    missing = [r for r in races if not (base / r).is_dir()]
    if missing:
        raise SourceError(f"RFW race folder(s) {missing} missing under {base}; "
                          f"pass races=[...] to use a subset")
    return folder_listing(base, root, {base / r: {"race": r} for r in races})


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


@register_adapter("utkface", default_group_by=("race",))
def utkface(root: Path, *, seed: int = 0) -> pd.DataFrame:
    """UTKFace: labels parsed from file names anywhere below ``root``.

    UTKFace has no identities, so each image is its own subject. A name that does not parse
    (a few official files lack a field) stays as an ``ok=False`` row with the reason.
    """
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


FAIRFACE_COLUMNS = ("file", "age", "gender", "race")


@register_adapter("fairface", default_group_by=("race",))
def fairface(root: Path, *, seed: int = 0, labels: Sequence[str] | None = None) -> pd.DataFrame:
    """FairFace: label csvs ``file,age,gender,race,service_test`` with ``file`` relative to
    ``root``. ``labels`` names the csvs (default: every ``fairface_label_*.csv`` in root).
    Each image is its own subject (FairFace has no identities)."""
    files = ([root / x for x in labels] if labels is not None
             else sorted(root.glob("fairface_label_*.csv")))
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
            attributes = {"age": rec["age"].strip(), "gender": rec["gender"].strip().lower(),
                          "race": rec["race"].strip()}
            if "service_test" in rec:
                attributes["service_test"] = rec["service_test"].strip().lower() == "true"
            reason = f"missing label(s) {empty} in {csv.name}" if empty else ""
            rows.append(listing_row(image_id, rel, image_id, attributes, not empty, reason))
    return listing_frame(rows)


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


@register_adapter("diveface", default_group_by=("race", "gender"))
def diveface(root: Path, *, seed: int = 0) -> pd.DataFrame:
    """DiveFace: ``{root}/{Group}/{subject}/*.jpg`` (also ``{root}/4K_120/{Group}/...``)
    with the six group folders mapped to race and gender as documented above."""
    base = root
    if not any(diveface_group(d.name) for d in subdirs(root)):
        nested = [d for d in subdirs(root) if any(diveface_group(x.name) for x in subdirs(d))]
        if len(nested) != 1:
            raise SourceError(f"no DiveFace group folders (e.g. HA4K_120, Group1_Male) under "
                              f"{root}" + (f"; several candidates {[d.name for d in nested]}"
                                           if nested else ""))
        base = nested[0]
    groups = {d: diveface_group(d.name) for d in subdirs(base)}
    unknown = [d.name for d, g in groups.items() if g is None]
    if unknown:
        raise SourceError(f"unrecognised DiveFace group folder(s) {unknown} under {base}; "
                          f"expected names like HA4K_120 (H/M gender, A/B/N ethnicity) or "
                          f"Group1_Male")
    return folder_listing(base, root, groups)


CSV_COLUMNS = ("path", "subject_id", "group")


@register_adapter("csv", default_group_by=("group",))
def csv_table(root: Path, *, seed: int = 0, table: str | None = None) -> pd.DataFrame:
    """Any csv with ``path, subject_id, group`` (+ optional ``image_id`` and extra attribute
    columns). ``root`` is the csv file, or a folder with ``table`` naming the csv in it.
    Relative paths start at the csv's folder; absolute paths are kept."""
    csv = root / table if table else root
    if not csv.is_file():
        raise SourceError(f"csv table not found: {csv}")
    folder = image_root(root)
    frame = pd.read_csv(csv, dtype=str, keep_default_na=False)
    require_columns(frame, CSV_COLUMNS, f"csv table {csv}")
    attribute_cols = [c for c in frame.columns if c not in ("path", "subject_id", "image_id")]
    rows = []
    for rec in frame.to_dict("records"):
        raw = Path(rec["path"].strip())
        full = raw if raw.is_absolute() else csv.parent / raw
        try:
            rel = full.relative_to(folder).as_posix()
        except ValueError:
            rel = full.as_posix()
        image_id = rec.get("image_id", "").strip() or image_id_from_path(rel)
        attributes = {c: rec[c] for c in attribute_cols}
        empty = [c for c in CSV_COLUMNS if not rec[c].strip()]
        reason = f"empty value(s) in {empty}" if empty else ""
        rows.append(listing_row(image_id, rel, rec["subject_id"].strip() or image_id,
                                attributes, not empty, reason))
    return listing_frame(rows)


SYNTHETIC_BASE_COLUMNS = ("image_id", "subject_id", "path")


@register_adapter("synthetic", default_group_by=("tone", "gender"))
def synthetic(root: Path, *, seed: int = 0, render: bool = True, **options) -> pd.DataFrame:
    """The embedded procedural faces, rendered into ``root`` (options go to the renderer).
    ``render=False`` lists them only; the workflow renders them shard by shard
    (:func:`fairforge.sources.synthetic.render_synthetic`)."""
    from fairforge.sources.synthetic import synthetic_listing, synthetic_sources

    table = (synthetic_sources(root, seed=seed, **options) if render
             else synthetic_listing(seed=seed, **options))
    require_columns(table, SYNTHETIC_BASE_COLUMNS, "synthetic renderer output")
    attribute_cols = [c for c in table.columns if c not in SYNTHETIC_BASE_COLUMNS]
    rows = [listing_row(str(rec["image_id"]), Path(rec["path"]).as_posix(),
                        rec["subject_id"], {c: rec[c] for c in attribute_cols})
            for rec in table.to_dict("records")]
    return listing_frame(rows)


# --------------------------------------------------------------------------------- manifest

def inspect_image_file(path: Path) -> tuple[int, int, str, bool, str]:
    """(width, height, sha256, ok, reason) of one file, decoding it once."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0, 0, "", False, "file not found"
    except OSError as err:
        return 0, 0, "", False, f"unreadable file ({err.strerror or err})"
    digest = hashlib.sha256(data).hexdigest()
    if not data:
        return 0, 0, digest, False, "empty file"
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if decoded is None:
        return 0, 0, digest, False, "unreadable image"
    try:
        rgb = to_rgb_uint8(decoded)
    except ImageError as err:
        return 0, 0, digest, False, str(err)
    return int(rgb.shape[1]), int(rgb.shape[0]), digest, True, ""


def group_of(attributes: Mapping[str, object], group_by: Sequence[str]) -> str:
    missing = [k for k in group_by if k not in attributes]
    if missing:
        raise SourceError(f"group_by attribute(s) {missing} not in the image attributes "
                          f"{sorted(attributes)}")
    return "_".join(str(attributes[k]) for k in group_by)


def _json_default(value: object):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"attribute value {value!r} is not JSON serialisable")


# Adapters that write their own images under ``root`` (rendered or decoded from videos).
RENDERED_ADAPTERS = ("synthetic", "synthetic_video", "video")


def build_sources(adapter: str, root: str | Path, dataset: str,
                  group_by: Sequence[str] | None = None,
                  split_fractions: Mapping[str, float] | None = None, seed: int = 0,
                  workers: int | None = None, **adapter_options) -> pd.DataFrame:
    """The sources manifest of a dataset (columns :data:`SOURCE_COLUMNS`, sorted by image_id):
    :func:`list_sources`, then :func:`inspect_sources` on every row.

    ``group_by`` lists the attributes whose values, joined by '_', form the group (default:
    the adapter's, e.g. ``['race']`` for RFW, ``['tone', 'gender']`` for synthetic). Rows an
    adapter could not label keep ``ok=False``, an empty group and an empty split; rows whose
    file cannot be decoded keep their subject's split with ``ok=False`` and the reason.
    """
    listing = list_sources(adapter, root, dataset, group_by, split_fractions, seed,
                           **adapter_options)
    return inspect_sources(listing, root, workers)


def list_sources(adapter: str, root: str | Path, dataset: str,
                 group_by: Sequence[str] | None = None,
                 split_fractions: Mapping[str, float] | None = None, seed: int = 0,
                 **adapter_options) -> pd.DataFrame:
    """Every image of a dataset with its subject, group, attributes and split, sorted by
    image_id, without opening the files: ``ok``/``reason`` say whether the adapter could
    label the image. :func:`inspect_sources` adds what the files say, shard by shard."""
    spec = get_adapter(adapter)
    root = Path(root)
    if spec.name not in RENDERED_ADAPTERS and not root.exists():
        raise SourceError(f"dataset root not found: {root}")
    group_by = list(group_by) if group_by else list(spec.default_group_by)
    fractions = dict(split_fractions) if split_fractions is not None else dict(DEFAULT_SPLIT)

    listing = spec.fn(root, seed=seed, **adapter_options)
    require_columns(listing, LISTING_COLUMNS, f"adapter {adapter!r} output")
    if listing.empty:
        raise SourceError(f"adapter {adapter!r} found no images under {root}")
    dupes = listing["image_id"][listing["image_id"].duplicated()].unique().tolist()
    if dupes:
        raise SourceError(f"duplicate image ids {dupes[:5]} in {adapter!r} listing of {root}")

    labelled = listing["ok"].to_numpy(bool)
    groups = [group_of(a, group_by) if ok else ""
              for a, ok in zip(listing["attributes"], labelled)]
    df = pd.DataFrame({
        "image_id": listing["image_id"].astype(str).to_numpy(object),
        "dataset": dataset,
        "path": listing["path"].astype(str).to_numpy(object),
        "subject_id": listing["subject_id"].astype(str).to_numpy(object),
        "group": np.asarray(groups, dtype=object),
        "attributes": [json.dumps(a, sort_keys=True, default=_json_default)
                       for a in listing["attributes"]],
    })
    split = np.full(len(df), "", dtype=object)
    if labelled.any():
        split[labelled] = split_by_subject(df[labelled], fractions, seed).to_numpy(object)
    df["split"] = split
    df["ok"] = labelled
    df["reason"] = listing["reason"].astype(str).to_numpy(object)
    # Frames of videos keep their clip and position (video-level metrics, video operations).
    for column in VIDEO_FRAME_COLUMNS:
        if column in listing.columns:
            df[column] = listing[column].to_numpy()
    return df.sort_values("image_id", kind="mergesort").reset_index(drop=True)


def inspect_sources(listing: pd.DataFrame, root: str | Path,
                    workers: int | None = None) -> pd.DataFrame:
    """Rows of :func:`list_sources` (all, or one shard) with each file's width, height and
    sha256; a file that cannot be read or decoded makes its row ``ok=False`` with the reason
    (an adapter's own reason comes first)."""
    base = image_root(root)
    paths = [base / p for p in listing["path"]]
    n_workers = workers or min(8, os.cpu_count() or 1)
    if n_workers > 1 and len(paths) > 1:
        # Decoding and hashing release the GIL; map keeps the order.
        with ThreadPoolExecutor(n_workers) as pool:
            info = list(pool.map(inspect_image_file, paths))
    else:
        info = [inspect_image_file(p) for p in paths]
    width, height, sha, file_ok, file_reason = zip(*info) if info else ([],) * 5
    df = listing.copy()
    df["width"] = np.asarray(width, dtype=np.int64)
    df["height"] = np.asarray(height, dtype=np.int64)
    df["sha256"] = np.asarray(sha, dtype=object)
    labelled = listing["ok"].to_numpy(bool)
    df["ok"] = labelled & np.asarray(file_ok, dtype=bool)
    df["reason"] = [lr if not lok else fr
                    for lok, lr, fr in zip(labelled, listing["reason"], file_reason)]
    video = [c for c in VIDEO_FRAME_COLUMNS if c in listing.columns]
    return df.reset_index(drop=True)[list(SOURCE_COLUMNS) + video]
