"""The samples manifest: every real crop and every successful fake, with its label.

Real samples are the aligned crops of ok faces (``method='real'``, label 0) and, in an
aligned release, the release's own crops of the real images whose face the detector missed
(``backend`` :data:`RELEASE_BACKEND`); fakes are the ok rows of every forgery manifest
(label 1, ``origin='generated'``) and, in a labelled dataset, the aligned crops of the fakes
it ships (label 1, their method, ``origin='imported'``, as its real images). Failed items are
not samples, but they stay in their own manifests and are counted per group in the failure
report.

:func:`method_samples` is one share of the same manifest: the dataset's own crops
(:data:`CROPS`: its real images and any fakes it ships), or one forgery method's fakes. It
is what training and prediction read, so that a new forgery method leaves the jobs of the
others untouched.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .columns import (
    FORGERY_COLUMNS,
    IMPORTED_MASK_COLUMNS,
    LABEL_COLUMNS,
    REAL,
    SAMPLE_COLUMNS,
    VIDEO_FRAME_COLUMNS,
    XRAY_COLUMN,
)
from .faces import release_crops
from .manifest import read_manifest

# What build_samples and failure_counts read of each manifest (sources also VIDEO_FRAME_COLUMNS when
# present): the samples job spans the dataset, so it loads these columns and no others.
SOURCE_INPUTS = ["image_id", "split", "group", "subject_id", "ok", "reason"]
# ... and of a labelled dataset's sources, when present.
SOURCE_LABEL_INPUTS = list(LABEL_COLUMNS[:2])
# The sources columns read when the manifest has them (video frames, labels).
SOURCE_OPTIONAL_INPUTS = [*VIDEO_FRAME_COLUMNS, *SOURCE_LABEL_INPUTS]
FACE_INPUTS = ["image_id", "ok", "reason", "crop_path"]
#: The share of the samples that is the dataset's own crops (real, and imported fakes).
CROPS = "crops"
#: A dataset's own crop's sample id: its image id after the prefix of its label (0, 1).
CROP_ID_PREFIX = ("real__", "fake__")
#: What the samples read of the imported masks manifest.
MASK_INPUTS = [c for c in IMPORTED_MASK_COLUMNS if c not in ("image_id", "method", "reason")]
#: The backend of a real sample whose face the detector missed, kept with the crop its
#: aligned release made (:func:`fairforge.faces.release_crops`).
RELEASE_BACKEND = "release_aligned"
FORGERY_INPUTS = [c for c in FORGERY_COLUMNS if c not in ("target_image_id", "params")]


def read_masks(paths) -> pd.DataFrame | None:
    """The imported masks manifest a samples job reads (:data:`MASK_INPUTS`), or None where
    the dataset ships no fakes (``paths`` empty)."""
    found = [read_manifest(p, "imported_masks", MASK_INPUTS) for p in paths]
    return found[0] if found else None


def build_samples(
    dataset: str,
    sources: pd.DataFrame,
    faces: pd.DataFrame,
    forgeries: list[pd.DataFrame],
    masks: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The samples manifest (module docstring). ``masks`` (the dataset's imported_masks
    manifest, where it ships fakes) gives each imported fake its ``mask_path`` and adds the
    column ``xray_path`` (Face X-ray's map of the mask): an imported fake without an ok row
    keeps no mask, which mask-supervised training leaves out."""
    labelled = "label" in sources.columns
    meta = sources[
        ["image_id", "split", "group", "subject_id"] + (SOURCE_LABEL_INPUTS if labelled else [])
    ]
    # An aligned release's real image whose face the detector missed is kept, with the
    # crop of the release's alignment (faces.release_crops).
    kept = release_crops(faces)
    real = faces.loc[faces["ok"] | kept, ["image_id", "crop_path"]].merge(
        meta, on="image_id", how="left", validate="1:1"
    )
    released = real["image_id"].isin(faces.loc[kept, "image_id"]).to_numpy()
    if not labelled:
        real = real.assign(label=0, method=REAL)
    # A dataset's own fakes are crops like its real images, labelled by the dataset.
    fake = real["label"].astype(int).to_numpy() == 1
    backend = np.where(fake, "imported", np.where(released, RELEASE_BACKEND, REAL))
    real = real.rename(columns={"crop_path": "path"}).assign(
        sample_id=np.where(fake, CROP_ID_PREFIX[1], CROP_ID_PREFIX[0]).astype(object)
        + real["image_id"].to_numpy(),
        mask_path=None,
        backend=backend.astype(object),
        origin="imported",
    )
    if masks is not None:
        made = masks.loc[masks["ok"].astype(bool)].set_index("sample_id")
        own = real["sample_id"].where(fake)
        for column in ("mask_path", XRAY_COLUMN):
            found = own.map(made[column])
            real[column] = found.astype(object).where(found.notna(), None)
    parts = [real]
    for fakes in forgeries:
        ok = fakes.loc[fakes["ok"]].copy()
        ok["label"] = 1
        ok["origin"] = "generated"
        parts.append(ok)
    samples = pd.concat([p.assign(dataset=dataset) for p in parts], ignore_index=True)
    samples["label"] = samples["label"].astype("int8")
    # Frames of videos keep their clip and position, for video-level metrics and video ops.
    video = [c for c in VIDEO_FRAME_COLUMNS if c in sources.columns]
    columns = SAMPLE_COLUMNS + ([XRAY_COLUMN] if masks is not None else [])
    if video:
        samples = samples.merge(sources[["image_id", *video]], on="image_id", how="left")
        columns = columns + video
    return samples[columns].sort_values("sample_id").reset_index(drop=True)


def method_samples(
    dataset: str,
    method: str,
    sources: pd.DataFrame,
    faces: pd.DataFrame,
    forgery: pd.DataFrame | None = None,
    masks: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One share of :func:`build_samples`: the dataset's own crops for :data:`CROPS` (no
    forgery manifest; ``masks``: those of the fakes it ships), else the ok fakes that
    ``forgery`` generated."""
    if (method == CROPS) != (forgery is None):
        raise ValueError(f"method {method!r}: a forgery manifest is needed for fakes only")
    forgeries = [] if forgery is None else [forgery]
    samples = build_samples(dataset, sources, faces, forgeries, masks if forgery is None else None)
    return share_of(samples, method)


def share_of(samples: pd.DataFrame, method: str) -> pd.DataFrame:
    """The rows of ``samples`` in one share (:func:`method_samples`): the dataset's own
    crops for :data:`CROPS`, else the fakes generated by ``method``."""
    own = samples["origin"] == "imported"
    keep = own if method == CROPS else ~own & (samples["method"] == method)
    return samples.loc[keep].reset_index(drop=True)


def failure_counts(
    sources: pd.DataFrame, faces: pd.DataFrame, forgeries: list[pd.DataFrame]
) -> pd.DataFrame:
    """Failures per stage, group and reason: a detector pipeline's failure rate can be unfair."""
    groups = sources.set_index("image_id")["group"]
    rows = []
    stages = [("sources", sources), ("faces", faces)]
    stages += [(f"forgery:{f['method'].iloc[0]}", f) for f in forgeries if len(f)]
    for stage, frame in stages:
        g = frame["image_id"].map(groups)
        table = pd.DataFrame(
            {"group": g, "ok": frame["ok"].astype(bool), "reason": frame["reason"].fillna("")}
        )
        for grp, part in table.groupby("group", sort=True):
            n_fail = int((~part["ok"]).sum())
            rows.append(
                {
                    "stage": stage,
                    "group": grp,
                    "n": len(part),
                    "n_failed": n_fail,
                    "failure_rate": n_fail / len(part) if len(part) else float("nan"),
                    "reasons": "; ".join(
                        f"{r} ({c})"
                        for r, c in part.loc[~part["ok"], "reason"]
                        .value_counts()
                        .sort_index()
                        .items()
                    ),
                }
            )
    return pd.DataFrame(rows)
