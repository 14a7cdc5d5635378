"""The samples manifest: every real crop and every successful fake, with its label.

Real samples are the aligned crops of ok faces (``method='real'``, label 0); fakes are the ok
rows of every forgery manifest (label 1, ``origin='generated'``) and, in a labelled dataset,
the aligned crops of the fakes it ships (label 1, their method, ``origin='imported'``, as its
real images). Failed items are not samples, but they stay in their own manifests and are
counted per group in the failure report.

:func:`method_samples` is one share of the same manifest: the dataset's own crops
(:data:`CROPS`: its real images and any fakes it ships), or one forgery method's fakes. It
is what training and prediction read, so that a new forgery method leaves the jobs of the
others untouched.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .columns import SAMPLE_COLUMNS, VIDEO_FRAME_COLUMNS

# What build_samples and failure_counts read of each manifest (sources also VIDEO_FRAME_COLUMNS when
# present): the samples job spans the dataset, so it loads these columns and no others.
SOURCE_INPUTS = ["image_id", "split", "group", "subject_id", "ok", "reason"]
# ... and of a labelled dataset's sources, when present.
SOURCE_LABEL_INPUTS = ["label", "method"]
# The sources columns read when the manifest has them (video frames, labels).
SOURCE_OPTIONAL_INPUTS = [*VIDEO_FRAME_COLUMNS, *SOURCE_LABEL_INPUTS]
FACE_INPUTS = ["image_id", "ok", "reason", "crop_path"]
#: The method of the real crops.
REAL = "real"
#: The share of the samples that is the dataset's own crops (real, and imported fakes).
CROPS = "crops"
FORGERY_INPUTS = [
    "sample_id",
    "method",
    "backend",
    "image_id",
    "path",
    "mask_path",
    "group",
    "subject_id",
    "split",
    "ok",
    "reason",
]


def build_samples(
    dataset: str, sources: pd.DataFrame, faces: pd.DataFrame, forgeries: list[pd.DataFrame]
) -> pd.DataFrame:
    labelled = "label" in sources.columns
    meta = sources[
        ["image_id", "split", "group", "subject_id"] + (SOURCE_LABEL_INPUTS if labelled else [])
    ]
    real = faces.loc[faces["ok"], ["image_id", "crop_path"]].merge(
        meta, on="image_id", how="left", validate="1:1"
    )
    if not labelled:
        real = real.assign(label=0, method=REAL)
    # A dataset's own fakes are crops like its real images, labelled by the dataset.
    fake = real["label"].astype(int).to_numpy() == 1
    real = real.rename(columns={"crop_path": "path"}).assign(
        sample_id=np.where(fake, "fake__", "real__").astype(object) + real["image_id"].to_numpy(),
        mask_path=None,
        backend=np.where(fake, "imported", "real").astype(object),
        origin="imported",
    )
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
    columns = SAMPLE_COLUMNS
    if video:
        samples = samples.merge(sources[["image_id", *video]], on="image_id", how="left")
        columns = SAMPLE_COLUMNS + video
    return samples[columns].sort_values("sample_id").reset_index(drop=True)


def method_samples(
    dataset: str,
    method: str,
    sources: pd.DataFrame,
    faces: pd.DataFrame,
    forgery: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One share of :func:`build_samples`: the dataset's own crops for :data:`CROPS` (no
    forgery manifest), else the ok fakes that ``forgery`` generated."""
    if (method == CROPS) != (forgery is None):
        raise ValueError(f"method {method!r}: a forgery manifest is needed for fakes only")
    if forgery is None:
        return build_samples(dataset, sources, faces, [])
    samples = build_samples(dataset, sources, faces, [forgery])
    return samples.loc[samples["origin"] == "generated"].reset_index(drop=True)


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
