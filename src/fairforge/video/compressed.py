"""Training on compressed copies: the crops a detector trains on, JPEG- or H.264-compressed.

``datasets.X.train_compression`` names a variant (``jpeg@60``, ``vid_h264@40``,
``df_video_compression@35`` ...; docs/perturbations.md): the training rows of each share of
that dataset's samples are replaced by copies made with it, once, before training, and
written as PNGs (lossless, so the copy keeps exactly the compression's artefacts). An image
variant runs crop by crop, seeded by (sample_id, variant) as at test time; a video variant
runs on each clip of crops (one (video, method) group, in frame order; an image alone is a
one-frame clip), as the video variants at inference do. Rows of other splits keep their
crops, so validation and prediction see the dataset as it is. FaceForensics++'s released
copies are chosen at the source instead (``options.compression``: raw, c23, c40).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from fairforge.images import read_image, write_image
from fairforge.perturb.variants import apply_variant, is_video_variant, op_for_variant
from fairforge.video.variants import video_variant_samples

TRAIN_SPLITS = ("train",)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class CompressionError(RuntimeError):
    """A training copy that could not be made (its clip, and why)."""


def compressed_copies(
    samples: pd.DataFrame,
    variant: str,
    *,
    results_root: str | Path,
    out_dir: str | Path,
    splits: Sequence[str] = TRAIN_SPLITS,
    cache_dir: str | Path | None = None,
    options: dict | None = None,
) -> pd.DataFrame:
    """``samples`` (paths relative to ``results_root``) with the rows of ``splits`` pointing
    at copies under ``out_dir`` made with ``variant``; same rows, same order, same columns.
    A copy that cannot be made raises :class:`CompressionError` naming the sample or clip,
    since training on the clean crop instead would not be what was asked."""
    results_root, out_dir = Path(results_root), Path(out_dir)
    chosen = samples["split"].isin(list(splits)).to_numpy()
    out = samples.copy()
    if not chosen.any():
        return out
    if is_video_variant(variant):
        copies = video_variant_samples(
            samples.loc[chosen],
            variant,
            results_root=results_root,
            out_dir=out_dir,
            cache_dir=cache_dir,
        )
        failed = copies.loc[~copies["ok"]]
        if len(failed):
            raise CompressionError(
                f"train_compression {variant}: {len(failed)} crop(s) failed, e.g. "
                f"{failed['sample_id'].iloc[0]}: {failed['reason'].iloc[0]}"
            )
        new = copies.set_index("sample_id")["path"]
        out.loc[chosen, "path"] = out.loc[chosen, "sample_id"].map(new).to_numpy()
        return out
    op_for_variant(variant, options)  # unknown op or level: fail before any work
    paths = []
    for sample_id, path in zip(out.loc[chosen, "sample_id"], out.loc[chosen, "path"]):
        image = apply_variant(read_image(results_root / path), variant, str(sample_id), options)
        dest = out_dir / f"{_UNSAFE.sub('_', str(sample_id))}.png"
        write_image(dest, image)
        paths.append(os.path.relpath(dest, results_root).replace(os.sep, "/"))
    out.loc[chosen, "path"] = paths
    return out
