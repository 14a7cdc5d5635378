"""The balanced synthetic dataset: subject and image ids, the listing, and rendering it
image by image (any subset, e.g. one shard, gives the same files as one run).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from fairforge.images import write_image
from fairforge.sources.synthetic.defaults import (
    DEFAULT_GENDERS,
    DEFAULT_SIZE,
    DEFAULT_TONES,
)
from fairforge.sources.synthetic.identities import sample_subject, sample_view
from fairforge.sources.synthetic.renderer import render_face


def subject_id_for(tone: str, gender: str, index: int) -> str:
    return f"syn_{tone}_{gender}_{index:03d}"


def image_id_for(subject_id: str, index: int) -> str:
    return f"{subject_id}_{index:04d}"


def subject_traits(
    tone: str,
    gender: str,
    tones: Sequence[str] = DEFAULT_TONES,
    genders: Sequence[str] = DEFAULT_GENDERS,
) -> dict:
    """``darkness`` (the tone's place on the scale, 0..1) and ``masculine`` (the second
    gender value) of a subject."""
    ti = list(tones).index(tone)
    return {
        "darkness": float(ti / (len(tones) - 1) if len(tones) > 1 else 0.5),
        "masculine": list(genders).index(gender) == 1,
    }


def synthetic_subject_table(
    *,
    subjects_per_group: int,
    seed: int,
    tones: Sequence[str] = DEFAULT_TONES,
    genders: Sequence[str] = DEFAULT_GENDERS,
) -> pd.DataFrame:
    """One row per subject (subject_id, tone, gender, darkness, masculine), balanced, sorted."""
    if subjects_per_group < 1:
        raise ValueError("subjects_per_group must be >= 1")
    if len(set(tones)) != len(tones) or len(set(genders)) != len(genders):
        raise ValueError("tone and gender names must be unique")
    if len(genders) != 2:
        raise ValueError(f"the synthetic world has a binary attribute; got genders={list(genders)}")
    rows = [
        {
            "subject_id": subject_id_for(tone, gender, k),
            "tone": tone,
            "gender": gender,
            **subject_traits(tone, gender, tones, genders),
        }
        for tone in tones
        for gender in genders
        for k in range(subjects_per_group)
    ]
    return pd.DataFrame(rows).sort_values("subject_id", kind="stable").reset_index(drop=True)


def synthetic_listing(
    *,
    subjects_per_group: int,
    images_per_subject: int,
    seed: int,
    tones: Sequence[str] = DEFAULT_TONES,
    genders: Sequence[str] = DEFAULT_GENDERS,
    size: int = DEFAULT_SIZE,
    image_ext: str = ".png",
) -> pd.DataFrame:
    """The images of the balanced synthetic world, not rendered: one row per image with
    image_id, subject_id, path (``{subject_id}/{image_id}{ext}``), tone, gender."""
    if images_per_subject < 1:
        raise ValueError("images_per_subject must be >= 1")
    subjects = synthetic_subject_table(
        subjects_per_group=subjects_per_group, seed=seed, tones=tones, genders=genders
    )
    ext = image_ext if image_ext.startswith(".") else "." + image_ext
    rows = [
        {
            "image_id": image_id_for(rec.subject_id, j),
            "subject_id": rec.subject_id,
            "path": f"{rec.subject_id}/{image_id_for(rec.subject_id, j)}{ext}",
            "tone": rec.tone,
            "gender": rec.gender,
        }
        for rec in subjects.itertuples(index=False)
        for j in range(images_per_subject)
    ]
    return pd.DataFrame(rows, columns=["image_id", "subject_id", "path", "tone", "gender"])


def render_synthetic(
    rows: pd.DataFrame,
    out_dir: str | Path,
    *,
    seed: int,
    tones: Sequence[str] = DEFAULT_TONES,
    genders: Sequence[str] = DEFAULT_GENDERS,
    size: int = DEFAULT_SIZE,
) -> None:
    """Render listed images (any subset, e.g. one shard; columns image_id, subject_id,
    path, tone, gender) to ``out_dir/{path}``: each image depends only on the seed and its
    ids, so shards rendered apart give the same files as one run."""
    out_dir = Path(out_dir)
    for subject_id, images in rows.groupby("subject_id", sort=True):
        first = images.iloc[0]
        subject = sample_subject(
            seed,
            subject_id,
            first["tone"],
            first["gender"],
            **subject_traits(first["tone"], first["gender"], tones, genders),
        )
        for image_id, rel in zip(images["image_id"], images["path"]):
            write_image(out_dir / rel, render_face(subject, sample_view(seed, image_id), size))


def render_listed(
    rows: pd.DataFrame,
    out_dir: str | Path,
    *,
    seed: int,
    tones: Sequence[str] = DEFAULT_TONES,
    genders: Sequence[str] = DEFAULT_GENDERS,
    size: int = DEFAULT_SIZE,
    **listing_options,
) -> None:
    """:func:`render_synthetic` for sources-manifest rows (tone and gender in the
    ``attributes`` JSON), with the dataset's synthetic options (those that only shape the
    listing are ignored)."""
    attributes = [json.loads(a) for a in rows["attributes"]]
    render_synthetic(
        rows.assign(tone=[a["tone"] for a in attributes], gender=[a["gender"] for a in attributes]),
        out_dir,
        seed=seed,
        tones=tones,
        genders=genders,
        size=size,
    )


def synthetic_sources(
    out_dir: str | Path,
    *,
    subjects_per_group: int,
    images_per_subject: int,
    seed: int,
    tones: Sequence[str] = DEFAULT_TONES,
    genders: Sequence[str] = DEFAULT_GENDERS,
    size: int = DEFAULT_SIZE,
    image_ext: str = ".png",
) -> pd.DataFrame:
    """Render the balanced synthetic world to ``out_dir/{subject_id}/{image_id}{ext}``.

    Returns one row per image: image_id, subject_id, path (relative, posix), tone, gender.
    The second gender value gets the masculine appearance traits.
    """
    table = synthetic_listing(
        subjects_per_group=subjects_per_group,
        images_per_subject=images_per_subject,
        seed=seed,
        tones=tones,
        genders=genders,
        size=size,
        image_ext=image_ext,
    )
    render_synthetic(table, out_dir, seed=seed, tones=tones, genders=genders, size=size)
    return table
