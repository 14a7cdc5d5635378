"""Subject-level train/val/test splits, stratified by group.

Every image of a subject lands in the same split, so a detector never sees a test identity in
training. Within each group the subjects are ordered by a seed derived from (seed, subject_id)
and cut by the fractions; a subject's split therefore depends only on the seed and the set of
subjects in its group, not on file order or sharding.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.seeding import derive_seed

SPLITS: tuple[str, ...] = ("train", "val", "test")


class SplitError(ValueError):
    pass


def check_fractions(fractions: Mapping[str, float]) -> dict[str, float]:
    """Validate ``{'train': .., 'val': .., 'test': ..}``: known names, non-negative, sum 1.

    Missing names count as 0, so ``{'test': 1.0}`` makes a test-only dataset.
    """
    unknown = sorted(set(fractions) - set(SPLITS))
    if unknown:
        raise SplitError(f"unknown split name(s) {unknown}; expected a subset of {list(SPLITS)}")
    out = {name: float(fractions.get(name, 0.0)) for name in SPLITS}
    if any(not math.isfinite(v) or v < 0 for v in out.values()):
        raise SplitError(f"split fractions must be finite and >= 0, got {out}")
    total = sum(out.values())
    if abs(total - 1.0) > 1e-6:
        raise SplitError(f"split fractions must sum to 1, got {out} (sum {total:g})")
    return out


def split_counts(n_subjects: int, fractions: Mapping[str, float]) -> dict[str, int]:
    """How many of ``n_subjects`` go to each split.

    Largest-remainder rounding of ``n * fraction``; then every split with a positive fraction
    gets at least one subject, taken from the split that holds the most (ties: the earliest
    of train, val, test gives).
    """
    fr = check_fractions(fractions)
    active = [s for s in SPLITS if fr[s] > 0]
    if n_subjects < len(active):
        raise SplitError(f"{n_subjects} subject(s) cannot fill {len(active)} splits {active}")
    exact = {s: n_subjects * fr[s] for s in SPLITS}
    counts = {s: int(math.floor(exact[s])) for s in SPLITS}
    leftover = n_subjects - sum(counts.values())
    # Largest remainder first; ties go to the earlier split so the rule is total.
    by_remainder = sorted(active, key=lambda s: (-(exact[s] - counts[s]), SPLITS.index(s)))
    for s in by_remainder[:leftover]:
        counts[s] += 1
    for s in active:
        while counts[s] == 0:
            donor = max(active, key=lambda d: (counts[d], -SPLITS.index(d)))
            counts[donor] -= 1
            counts[s] += 1
    return counts


def subject_strata(subjects: pd.Series, groups: pd.Series) -> pd.Series:
    """One group per subject: its most frequent group (ties: the smallest name).

    Subjects normally belong to one group; the rule only matters when ``group_by`` uses a
    per-image attribute (e.g. an age bin), and keeps the split subject-level even then.
    """
    counts = (
        pd.DataFrame(
            {"subject_id": subjects.astype(str).to_numpy(), "group": groups.astype(str).to_numpy()}
        )
        .value_counts()
        .rename("n")
        .reset_index()
    )
    counts = counts.sort_values(
        ["subject_id", "n", "group"], ascending=[True, False, True], kind="mergesort"
    )
    first = counts.drop_duplicates("subject_id", keep="first")
    return pd.Series(first["group"].to_numpy(), index=first["subject_id"].to_numpy(), name="group")


def assign_subject_splits(
    subjects: pd.Series, groups: pd.Series, fractions: Mapping[str, float], seed: int
) -> dict[str, str]:
    """Map each subject id to 'train', 'val' or 'test'.

    Raises :class:`SplitError` naming the group when a group has fewer subjects than there
    are splits with a positive fraction (a group absent from a split would make per-group
    metrics on that split undefined).
    """
    fr = check_fractions(fractions)
    strata = subject_strata(subjects, groups)
    assignment: dict[str, str] = {}
    for group, members in strata.groupby(strata, sort=True):
        ids = np.asarray(members.index, dtype=object)
        keys = np.array([derive_seed(seed, "split", sid) for sid in ids], dtype=np.uint64)
        order = np.lexsort((ids.astype(str), keys))
        try:
            counts = split_counts(len(ids), fr)
        except SplitError as err:
            raise SplitError(
                f"group {group!r}: {err}; add subjects, merge groups or change the split fractions"
            ) from None
        bounds = np.cumsum([counts[s] for s in SPLITS])
        labels = np.array(SPLITS, dtype=object)[
            np.searchsorted(bounds, np.arange(len(ids)), side="right")
        ]
        assignment.update(zip(ids[order].tolist(), labels.tolist()))
    return assignment


def split_by_subject(
    df: pd.DataFrame,
    fractions: Mapping[str, float],
    seed: int,
    subject_col: str = "subject_id",
    group_col: str = "group",
) -> pd.Series:
    """The split of every row of ``df``, as a string Series aligned with ``df``."""
    mapping = assign_subject_splits(df[subject_col], df[group_col], fractions, seed)
    return df[subject_col].astype(str).map(mapping).astype(object)


# ------------------------------------------------------------------ linked subjects

LINK_COLUMNS = ("source_subject", "target_subject")


def linked_subjects(df: pd.DataFrame, subject_col: str = "subject_id") -> pd.Series:
    """One key per row: the smallest subject id of the subjects linked to the row's subject.

    A fake made from two identities (``source_subject``, ``target_subject``) links them: both
    must land in the fake's split, or a test identity would be seen in training. Without
    those columns every subject is its own key.
    """
    subjects = df[subject_col].astype(str)
    present = [c for c in LINK_COLUMNS if c in df.columns]
    if not present:
        return subjects.copy()
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for row in zip(subjects, *(df[c].fillna("").astype(str) for c in present)):
        ids = [x for x in row if x]
        for other in ids[1:]:
            a, b = find(ids[0]), find(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return subjects.map(find).astype(object)


def row_subjects(df: pd.DataFrame, subject_col: str = "subject_id") -> list[set[str]]:
    """Every identity a row shows: its subject and, for a fake, its source and target."""
    present = [c for c in LINK_COLUMNS if c in df.columns]
    columns = [df[subject_col].astype(str)] + [df[c].fillna("").astype(str) for c in present]
    return [{x for x in row if x} for row in zip(*columns)]


def subject_overlaps(df: pd.DataFrame, subject_col: str = "subject_id") -> dict[str, list[str]]:
    """Identities that rows of more than one split show: subject -> its splits (empty when
    the split is subject-disjoint). Rows with an empty split are not counted."""
    seen: dict[str, set[str]] = {}
    for subjects, split in zip(row_subjects(df, subject_col), df["split"].astype(str)):
        if split:
            for s in subjects:
                seen.setdefault(s, set()).add(split)
    return {s: sorted(v, key=SPLITS.index) for s, v in sorted(seen.items()) if len(v) > 1}


def check_subject_disjoint(df: pd.DataFrame, subject_col: str = "subject_id") -> None:
    """Raise :class:`SplitError` naming the identities that appear in more than one split."""
    overlaps = subject_overlaps(df, subject_col)
    if overlaps:
        shown = ", ".join(f"{s} in {v}" for s, v in list(overlaps.items())[:5])
        raise SplitError(f"{len(overlaps)} subject(s) in more than one split: {shown}")


OVERLAP_REASON = "subject also in the {split} split"


def drop_overlaps(split: pd.Series, df: pd.DataFrame, subject_col: str = "subject_id"):
    """Make a given split (an official list) subject-disjoint without losing rows: an identity
    shown in test is a test identity, else one shown in val is a val identity; a row of another
    split that shows it gets split '' and the reason (which the caller records with
    ``ok=False``). Returns (split, reasons)."""
    split = split.astype(object).fillna("").astype(str)
    subjects = row_subjects(df, subject_col)
    owner: dict[str, str] = {}
    for name in ("test", "val", "train"):
        for subs, s in zip(subjects, split):
            if s == name:
                for x in subs:
                    owner.setdefault(x, name)
    new, reasons = [], []
    for subs, s in zip(subjects, split):
        clash = sorted({owner[x] for x in subs if owner.get(x, s) != s}, key=SPLITS.index)
        if s and clash:
            new.append("")
            reasons.append(OVERLAP_REASON.format(split=clash[0]))
        else:
            new.append(s)
            reasons.append("")
    return pd.Series(new, index=split.index, dtype=object), reasons


# ------------------------------------------------------------------ per-dataset split specs

TEST_ONLY = "test_only"
OFFICIAL = "official"
NOT_IN_SPLIT = "subject not in the split file(s)"


_RATIO = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*:\s*(\d+(?:\.\d*)?)\s*:\s*(\d+(?:\.\d*)?)\s*$")


def ratio_fractions(spec: str) -> dict[str, float] | None:
    """``'14:1:1'`` (train:val:test) as fractions, or None for a string of another form."""
    m = _RATIO.match(spec)
    if not m:
        return None
    parts = [float(x) for x in m.groups()]
    if sum(parts) <= 0:
        raise SplitError(f"split ratio {spec!r} has no positive part")
    return check_fractions({s: p / sum(parts) for s, p in zip(SPLITS, parts)})


# Keys of a mapping split spec that tune how a split is made rather than say what it is.
SPLIT_OPTIONS = ("subject_disjoint", "val_from_train", "frame_ratio")


@dataclass(frozen=True)
class SplitSpec:
    """A dataset's ``split:`` read: ``fractions`` (by subject, or by video where
    ``subject_disjoint`` is false), or a ``listed`` split (``'official'``: the adapter's own;
    or ``{file: ..}`` / ``{files: ..}``), with its options: ``subject_disjoint`` (None: the
    adapter's own definition for ``official``, else true), ``val_from_train`` (the share of
    the train part's subjects, or videos, moved to val) and ``frame_ratio`` (train:val:test
    shares of all frames, the per-video frame counts following from it)."""

    fractions: dict[str, float] | None = None
    listed: object = None
    subject_disjoint: bool | None = None
    val_from_train: float = 0.0
    frame_ratio: dict[str, float] | None = None

    @property
    def official(self) -> bool:
        return self.listed == OFFICIAL


def _ratio_of(value, key: str) -> dict[str, float]:
    """``'14:1:1'`` or ``{train: 14, val: 1, test: 1}`` as shares that sum to 1."""
    if isinstance(value, str) and (ratio := ratio_fractions(value)) is not None:
        return ratio
    if isinstance(value, Mapping):
        try:
            parts = {s: float(value.get(s, 0)) for s in value}
        except (TypeError, ValueError):
            parts = {}
        total = sum(parts.values())
        if parts and total > 0 and all(v >= 0 for v in parts.values()):
            return check_fractions({s: v / total for s, v in parts.items()})
    raise SplitError(
        f"split.{key} {value!r}: expected a ratio 'train:val:test' such as '14:1:1', or "
        "{train: 14, val: 1, test: 1}"
    )


def parse_split(spec) -> SplitSpec:
    """Read a split spec (:class:`SplitSpec`): fractions ``{train, val, test}``, a ratio
    ``'14:1:1'``, ``test_only``, ``official``, ``{file: ..}`` or ``{files: ..}``; a mapping
    form may add :data:`SPLIT_OPTIONS`, and ``{official: true, ..}`` is the official split with
    options. Raises :class:`SplitError` naming what is wrong."""
    if isinstance(spec, SplitSpec):
        return spec
    options: dict = {}
    if isinstance(spec, Mapping):
        options = {k: spec[k] for k in SPLIT_OPTIONS if k in spec}
        spec = {k: v for k, v in spec.items() if k not in SPLIT_OPTIONS}
        if "official" in spec:
            if spec != {"official": True}:
                raise SplitError(
                    f"split {dict(spec)!r}: `official: true` takes only the options "
                    f"{list(SPLIT_OPTIONS)}"
                )
            spec = OFFICIAL
    if spec == TEST_ONLY:
        fractions, listed = {"train": 0.0, "val": 0.0, "test": 1.0}, None
    elif spec == OFFICIAL:
        fractions, listed = None, OFFICIAL
    elif isinstance(spec, str) and (ratio := ratio_fractions(spec)) is not None:
        fractions, listed = ratio, None
    elif isinstance(spec, Mapping) and {"file", "files"} & set(spec):
        fractions, listed = None, dict(spec)
    elif isinstance(spec, Mapping) and spec:
        fractions, listed = check_fractions(spec), None
    else:
        raise SplitError(
            f"split {spec!r}: expected fractions {{train, val, test}}, a ratio 'train:val:test' "
            f"such as '14:1:1', {TEST_ONLY!r}, {OFFICIAL!r} (or {{official: true}}), "
            "{file: subjects.csv} or {files: {train: .., val: .., test: ..}}"
        )
    disjoint = options.get("subject_disjoint")
    if disjoint is not None and not isinstance(disjoint, bool):
        raise SplitError(f"split.subject_disjoint must be true or false, got {disjoint!r}")
    share = options.get("val_from_train", 0.0)
    if not isinstance(share, (int, float)) or isinstance(share, bool) or not 0 <= share < 1:
        raise SplitError(f"split.val_from_train must be a share in [0, 1), got {share!r}")
    if share and listed is None:
        raise SplitError(
            "split.val_from_train carves val out of an official or listed split's train part; "
            "with fractions, give val its own fraction"
        )
    ratio = options.get("frame_ratio")
    return SplitSpec(
        fractions=fractions,
        listed=listed,
        subject_disjoint=disjoint,
        val_from_train=float(share),
        frame_ratio=None if ratio is None else _ratio_of(ratio, "frame_ratio"),
    )


def fractions_of(spec) -> dict[str, float] | None:
    """The fractions a split spec gives (``test_only`` is all test, ``'14:1:1'`` a
    train:val:test ratio), or None for a spec that lists subjects (``official``, ``file``,
    ``files``)."""
    return parse_split(spec).fractions


def _flatten(value) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    return [str(value)]


def read_split_files(spec: Mapping, base: Path) -> dict[str, str]:
    """Subject -> split from ``{file: csv}`` (columns subject_id, split) or ``{files: {split:
    json}}`` (a list of subject ids, or of lists of ids as FaceForensics++'s
    ``[[id1, id2], ...]``); relative paths start at ``base``. A subject listed in two splits
    is an error."""
    mapping: dict[str, str] = {}

    def put(subject: str, split: str, where: Path) -> None:
        if split not in SPLITS:
            raise SplitError(f"{where}: unknown split {split!r} (expected one of {list(SPLITS)})")
        if mapping.setdefault(subject, split) != split:
            raise SplitError(f"{where}: subject {subject!r} in both {mapping[subject]} and {split}")

    if "file" in spec:
        path = base / str(spec["file"])
        if not path.is_file():
            raise SplitError(f"split file not found: {path}")
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
        missing = [c for c in ("subject_id", "split") if c not in table.columns]
        if missing:
            raise SplitError(f"split file {path} lacks column(s) {missing}")
        for subject, split in zip(table["subject_id"].str.strip(), table["split"].str.strip()):
            put(subject, split, path)
    for split, name in (spec.get("files") or {}).items():
        path = base / str(name)
        if not path.is_file():
            raise SplitError(f"split file not found: {path}")
        try:
            ids = _flatten(json.loads(path.read_text()))
        except json.JSONDecodeError as err:
            raise SplitError(f"split file {path} is not JSON: {err}") from None
        for subject in ids:
            put(subject, split, path)
    return mapping


def listed_split(
    df: pd.DataFrame, split: pd.Series, subject_disjoint: bool = True
) -> tuple[pd.Series, list[str]]:
    """A split given per row (an official list, a split file), made subject-disjoint
    (:func:`drop_overlaps`) unless ``subject_disjoint`` is false (the list as given: Celeb-DF's
    test list shows identities its training videos show too); rows it leaves without a split
    get the reason."""
    missing = split.astype(object).fillna("").astype(str) == ""
    if subject_disjoint:
        split, reasons = drop_overlaps(split, df)
    else:
        split, reasons = split.astype(object).fillna("").astype(str), [""] * len(split)
    reasons = [NOT_IN_SPLIT if m and not r else r for m, r in zip(missing, reasons)]
    return split, reasons


def split_units(df: pd.DataFrame, subject_disjoint: bool = True) -> pd.Series:
    """What a split keeps together: the identities a fake links (:func:`linked_subjects`),
    or, where the split need not be subject-disjoint, each video (each image of a dataset
    of images): a video-level split such as the Benchmark's (Table 1)."""
    if subject_disjoint:
        return linked_subjects(df)
    units = df["image_id"].astype(str)
    if "video_id" in df.columns:
        videos = df["video_id"]
        units = videos.where(videos.notna() & (videos.astype(str) != ""), units).astype(str)
    return units.astype(object)


def split_rows(
    df: pd.DataFrame, fractions: Mapping[str, float], seed: int, subject_disjoint: bool = True
) -> pd.Series:
    """Fractions split by subject where identities a fake links (:func:`linked_subjects`) go
    together, checked subject-disjoint; by video (:func:`split_units`) where
    ``subject_disjoint`` is false."""
    keyed = df.assign(subject_id=split_units(df, subject_disjoint))
    split = split_by_subject(keyed, fractions, seed)
    if subject_disjoint:
        check_subject_disjoint(df.assign(split=split))
    return split


def carve_val(
    df: pd.DataFrame, split: pd.Series, share: float, seed: int, subject_disjoint: bool = True
) -> pd.Series:
    """``split`` with ``share`` of its train part moved to val: by subject (the identities a
    fake links go together) or, where the split need not be subject-disjoint, by video;
    stratified by group as fractions are (Assessment §5.1: Celeb-DF's rows off its test list,
    80% train and 20% val)."""
    split = pd.Series(np.asarray(split, dtype=object), index=df.index)
    train = (split == "train").to_numpy()
    if not share or not train.any():
        return split
    part = df[train]
    units = split_units(part, subject_disjoint)
    fractions = {"train": 1.0 - share, "val": share}
    try:
        mapping = assign_subject_splits(units, part["group"], fractions, seed)
    except SplitError as err:
        raise SplitError(f"split.val_from_train {share:g}: {err}") from None
    split[train] = units.map(mapping).to_numpy(object)
    return split


# ------------------------------------------------------------------ frames per split


def most_frames(frames_per_video, default: int) -> int:
    """The frames to sample per video for ``frames_per_video``: a number, or per split
    ``{train: 14, val: 1, test: 1}`` (then the most, which :func:`thin_frames` cuts down
    once the split is known); ``default`` when it is None."""
    if frames_per_video is None:
        return int(default)
    if isinstance(frames_per_video, Mapping):
        unknown = sorted(set(frames_per_video) - set(SPLITS))
        if unknown or not frames_per_video:
            raise SplitError(
                f"frames_per_video {dict(frames_per_video)}: expected a number, or one per "
                f"split of {list(SPLITS)}"
            )
        return max(int(n) for n in frames_per_video.values())
    return int(frames_per_video)


def even_positions(n_available: int, n: int) -> list[int]:
    """``n`` evenly spaced positions of ``range(n_available)``, first and last included."""
    if n_available <= n:
        return list(range(n_available))
    return sorted({int(round(x)) for x in np.linspace(0, n_available - 1, n)})


def thin_frames(df: pd.DataFrame, per_split: Mapping[str, int]) -> pd.DataFrame:
    """Keep, of each video's sampled frames (``video_id``, ``frame_index`` >= 0), the
    ``per_split[split]`` evenly spaced ones, first and last included; a video of a split
    the mapping leaves out, and a row without a split or a frame (a failed video), keep
    every row. Frame-level ratios such as FaceForensics++'s many training frames per
    video and few test frames are this, on a subject-disjoint split."""
    keep = np.ones(len(df), dtype=bool)
    frames = df["frame_index"].to_numpy() >= 0
    groups = df[frames].groupby(["video_id", "split"], sort=False).groups
    for (_, s), rows in groups.items():
        if s not in per_split:
            continue
        positions = df.index.get_indexer(rows)
        order = positions[np.argsort(df["frame_index"].to_numpy()[positions], kind="stable")]
        chosen = set(even_positions(len(order), int(per_split[s])))
        keep[[p for i, p in enumerate(order) if i not in chosen]] = False
    return df.loc[keep]


def ratio_frames(df: pd.DataFrame, ratio: Mapping[str, float]) -> dict[str, int]:
    """Frames to keep per video in each split so that the splits' frame totals follow
    ``ratio`` (Benchmark §3.1.1: frames extracted from the split videos at a frame-level
    ratio of 14:1:1): a split with fewer videos for its share keeps more frames of each, at
    most as many as were sampled per video, at least one. Videos are counted among the
    usable rows with a frame."""
    usable = df[df["ok"].to_numpy(bool) & (df["frame_index"].to_numpy() >= 0)]
    if usable.empty:
        return {}
    most = int(usable.groupby("video_id").size().max())
    videos = usable.drop_duplicates("video_id")["split"].value_counts()
    need = {s: ratio[s] / videos[s] for s in SPLITS if ratio.get(s, 0) > 0 and videos.get(s, 0)}
    top = max(need.values(), default=0.0)
    return {s: max(1, int(round(most * w / top))) for s, w in need.items()}


def split_report(df: pd.DataFrame, dataset: str, subject_disjoint: bool) -> pd.DataFrame:
    """One row per split of a sources listing (and ``none``: rows left without a split):
    its rows, usable rows, videos, identities shown, fakes, the identities it shares with
    another split (none where the split is subject-disjoint) and whether it was asked to be.
    Written next to the listing, so that a protocol that voids rows or shares identities is
    seen, not guessed."""
    usable = df["ok"].to_numpy(bool) & (df["split"].astype(str) != "").to_numpy()
    shows = row_subjects(df)
    seen: dict[str, set[str]] = {}
    for subjects, split, ok in zip(shows, df["split"].astype(str), usable):
        if ok:
            for x in subjects:
                seen.setdefault(x, set()).add(split)
    rows = []
    for name in (*SPLITS, ""):
        mine = (df["split"].astype(str) == name).to_numpy()
        ok = mine & usable
        identities = set().union(*(shows[i] for i in np.flatnonzero(ok))) if ok.any() else set()
        videos = df.loc[mine, "video_id"].nunique() if "video_id" in df.columns else 0
        fakes = int((df.loc[ok, "label"] == 1).sum()) if "label" in df.columns else 0
        rows.append(
            {
                "dataset": dataset,
                "split": name or "none",
                "subject_disjoint": bool(subject_disjoint),
                "rows": int(mine.sum()),
                "usable": int(ok.sum()),
                "videos": int(videos),
                "subjects": len(identities),
                "fake": fakes,
                "shared_subjects": sum(1 for x in identities if len(seen[x]) > 1),
            }
        )
    return pd.DataFrame(rows)
