"""The image adapters: public face datasets on disk, any labelled csv, and the synthetic world.

Each is a :class:`~fairforge.sources.base.SourceAdapter` registered on
:data:`~fairforge.sources.base.ADAPTERS`; the video adapters live with the frame sampler
(:mod:`fairforge.video.frames`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.sources.base import (
    ADAPTERS,
    REAL_METHOD,
    SourceAdapter,
    SourceError,
    configured_root,
    count_csv_rows,
    image_id_from_path,
    image_root,
    iter_images,
    labelled_row,
    listing_frame,
    listing_row,
    require_columns,
    subdirs,
)
from fairforge.sources.split import assign_subject_splits
from fairforge.sources.synthetic import (
    render_listed,
    synthetic_listing,
    synthetic_options,
    synthetic_sources,
)


def folder_listing(
    base: Path, root: Path, group_dirs: Mapping[Path, Mapping[str, str]]
) -> pd.DataFrame:
    """Rows for a ``{group}/{subject}/**/*.jpg`` tree; ids are relative to ``base``, paths to
    ``root`` (so ``{root}/data/{Race}`` and ``{root}/{Race}`` give the same ids)."""
    rows = []
    for group_dir, attributes in group_dirs.items():
        for subject_dir in subdirs(group_dir):
            for f in iter_images(subject_dir):
                rows.append(
                    listing_row(
                        image_id_from_path(f.relative_to(base)),
                        f.relative_to(root).as_posix(),
                        subject_dir.name,
                        attributes,
                    )
                )
    return listing_frame(rows)


# ------------------------------------------------------------------------------------ RFW

RFW_RACES = ("African", "Asian", "Caucasian", "Indian")


@ADAPTERS.register("rfw")
class RFW(SourceAdapter):
    """RFW: ``{root}/{Race}/{subject}/{image}.jpg``; the official archive's
    ``{root}/data/{Race}`` and ``{root}/test/data/{Race}`` layouts are found too.

    Every requested race must be present; pass ``races=[...]`` to use a subset. Its images
    are aligned 400-px face crops, which FairFD (§3.3) uses as they are: a real image whose
    face the detector misses stays a sample, cropped by RFW's alignment
    (:attr:`~fairforge.sources.base.SourceAdapter.aligned_release`).
    """

    default_group_by = ("race",)
    aligned_release = True

    def list(self, root: Path, *, seed: int = 0, races: Sequence[str] = RFW_RACES) -> pd.DataFrame:
        candidates = [root, root / "data", root / "test" / "data"]
        base = next((c for c in candidates if any((c / r).is_dir() for r in races)), None)
        if base is None:
            raise SourceError(
                f"no RFW race folder ({', '.join(races)}) under {root}, "
                f"{root / 'data'} or {root / 'test' / 'data'}"
            )
        missing = [r for r in races if not (base / r).is_dir()]
        if missing:
            raise SourceError(
                f"RFW race folder(s) {missing} missing under {base}; "
                f"pass races=[...] to use a subset"
            )
        return folder_listing(base, root, {base / r: {"race": r} for r in races})


# -------------------------------------------------------------------------------- UTKFace

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


# ------------------------------------------------------------------------------- FairFace

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


# ------------------------------------------------------------------------------- DiveFace

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


# DiveFace's own split (Exposure §4, Data Preparation): "the original authors divided the
# entire data set into two sets, a training set and a test set, containing 70% and 30% of
# the identities". The release ships no list of them, so it is drawn by identity, per group.
DIVEFACE_SPLIT = {"train": 0.7, "test": 0.3}


@ADAPTERS.register("diveface")
class DiveFace(SourceAdapter):
    """DiveFace: ``{root}/{Group}/{subject}/*.jpg`` (also ``{root}/4K_120/{Group}/...``)
    with the six group folders mapped to race and gender as documented above.
    ``split: official`` is the dataset's 70/30 train/test split by identity
    (:data:`DIVEFACE_SPLIT`), drawn from the run's seed within each of the six groups."""

    default_group_by = ("race", "gender")

    def official_split(
        self, listing: pd.DataFrame, root: Path, *, seed: int = 0, **options
    ) -> pd.Series:
        groups = listing["attributes"].map(lambda a: f"{a['race']}_{a['gender']}")
        mapping = assign_subject_splits(listing["subject_id"], groups, DIVEFACE_SPLIT, seed)
        return listing["subject_id"].astype(str).map(mapping).astype(object)

    def list(self, root: Path, *, seed: int = 0) -> pd.DataFrame:
        base = root
        if not any(diveface_group(d.name) for d in subdirs(root)):
            nested = [d for d in subdirs(root) if any(diveface_group(x.name) for x in subdirs(d))]
            if len(nested) != 1:
                raise SourceError(
                    f"no DiveFace group folders (e.g. HA4K_120, Group1_Male) under {root}"
                    + (f"; several candidates {[d.name for d in nested]}" if nested else "")
                )
            base = nested[0]
        groups = {d: diveface_group(d.name) for d in subdirs(base)}
        unknown = [d.name for d, g in groups.items() if g is None]
        if unknown:
            raise SourceError(
                f"unrecognised DiveFace group folder(s) {unknown} under {base}; "
                f"expected names like HA4K_120 (H/M gender, A/B/N ethnicity) "
                f"or Group1_Male"
            )
        return folder_listing(base, root, groups)


# ------------------------------------------------------------------------------- VGGFace2

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


# ------------------------------------------------------------------------------------ csv

CSV_COLUMNS = ("path", "subject_id", "group")
# Optional columns of a labelled csv (real and fake images); not attributes.
CSV_LABEL_COLUMNS = ("label", "method", "source_subject", "target_subject")
_LABEL_WORDS = {"0": 0, "1": 1, "real": 0, "fake": 1}


def csv_label(label: str, method: str) -> tuple[int, str, str]:
    """(label, method, reason) of one csv row: ``label`` 0/1 (or real/fake), ``method`` the
    fake's manipulation ('real', or empty, for a real image). Either column alone suffices:
    a method other than 'real' makes a fake, a label 1 needs a method."""
    label, method = label.strip().lower(), method.strip()
    if not label:
        return (0 if method in ("", REAL_METHOD) else 1), method or REAL_METHOD, ""
    if label not in _LABEL_WORDS:
        return 0, method or REAL_METHOD, f"label must be 0/1 or real/fake, got {label!r}"
    value = _LABEL_WORDS[label]
    if value == 1 and method in ("", REAL_METHOD):
        return 1, method, "a fake (label 1) needs its method"
    if value == 0 and method not in ("", REAL_METHOD):
        return 0, method, f"a real image (label 0) has method {REAL_METHOD!r}, got {method!r}"
    return value, method or REAL_METHOD, ""


def csv_methods(csv: Path) -> list[str]:
    """The manipulation methods a labelled csv lists (its ``method`` column, 'real' left
    out; [] without one)."""
    table = pd.read_csv(csv, dtype=str, keep_default_na=False)
    if "method" not in table.columns:
        return []
    return sorted({m.strip() for m in table["method"]} - {"", REAL_METHOD})


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
            try:
                rel = full.relative_to(folder).as_posix()
            except ValueError:
                rel = full.as_posix()
            image_id = rec.get("image_id", "").strip() or image_id_from_path(rel)
            attributes = {c: rec[c] for c in attribute_cols}
            empty = [c for c in CSV_COLUMNS if not rec[c].strip()]
            reason = f"empty value(s) in {empty}" if empty else ""
            row = listing_row(
                image_id, rel, rec["subject_id"].strip() or image_id, attributes, not empty, reason
            )
            if labelled:
                label, method, bad = csv_label(rec.get("label", ""), rec.get("method", ""))
                if bad and row["ok"]:
                    row.update(ok=False, reason=bad)
                row = labelled_row(
                    row,
                    label,
                    method,
                    rec.get("source_subject", "").strip(),
                    rec.get("target_subject", "").strip(),
                )
            rows.append(row)
        return listing_frame(rows)


# ------------------------------------------------------------------------------ synthetic

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
