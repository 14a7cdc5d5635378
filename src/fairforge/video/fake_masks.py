"""The manipulation masks of the fakes a dataset ships, one job per shard of its sources.

A fake that FaceForensics++, Celeb-DF or a csv of fakes ships is a crop like a real image:
the faces stage found and aligned its face. A detector supervised by masks (FFD, Face X-ray
trained as the Benchmark trains it) needs the manipulation mask on that crop, so for each
fake of the shard (:func:`fake_masks`):

1. the transform the faces stage aligned its frame by (the faces shard's transforms,
   :func:`fairforge.faces.process_faces` ``with_matrix``) warps its frame again, and the crop
   so made must be the stored crop, pixel for pixel (a fake whose crop is not reproduced, a
   stale file, gets no mask, with the reason);
2. its references (:meth:`~fairforge.sources.base.SourceAdapter.fake_references`) are
   warped by that transform: the mask the dataset released, frame ``frame_index`` of its mask
   video, binarised (:func:`~fairforge.forgery.difference_masks.released_mask`); where there
   is none, or it is empty on this frame, the pristine frame of the same index the fake was
   made from, and the difference mask of the two crops
   (:func:`~fairforge.forgery.difference_masks.difference_mask`);
3. the mask and Face X-ray's map of it (:func:`~fairforge.forgery.difference_masks.mask_xray`)
   are written as the forgery stage writes a generated fake's, ``{stem}_mask.png`` and
   ``{stem}_xray.png``.

A fake with neither reference, or whose references cannot be read, is a row with
``ok=False`` and the reason, never an empty mask: mask-supervised training leaves it out
(:func:`fairforge.data.mask_supervised`). Each video is decoded once per job, the frames its
fakes need only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.columns import IMPORTED_MASK_COLUMNS
from fairforge.faces import landmarks_array
from fairforge.faces.align import DEFAULT_BORDER, warp_crop
from fairforge.forgery.base import ForgeryError
from fairforge.forgery.difference_masks import (
    DIFFERENCE,
    RELEASED,
    difference_mask,
    mask_xray,
    released_mask,
)
from fairforge.forgery.shard import file_stem
from fairforge.images import (
    DEFAULT_LIMITS,
    ImageError,
    ImageLimits,
    load_image,
    read_image,
    write_image,
)
from fairforge.manifest import read_manifest
from fairforge.samples import CROP_ID_PREFIX
from fairforge.sharding import read_shard
from fairforge.sources.base import ADAPTERS, image_root, is_image_file
from fairforge.sources.videos import frame_files
from fairforge.video.ffmpeg import VideoError
from fairforge.video.frame_variants import read_frames_at

#: The reason of a fake the dataset gives neither a released mask nor a source for.
NO_REFERENCE = "no released mask and no source frame"


def reference_frames(
    path: str, indices: list[int], limits: ImageLimits = DEFAULT_LIMITS
) -> dict[int, np.ndarray | str]:
    """Frames ``indices`` of a reference (a video file, a folder of frames, or an image,
    which is every index's frame): index -> frame, or the reason it has none."""
    file = Path(path)
    try:
        if file.is_dir():
            frames = frame_files(file)
            return {
                i: load_image(frames[i], limits)
                if 0 <= i < len(frames)
                else f"frame {i} is not in {file.name} ({len(frames)} frames)"
                for i in indices
            }
        if is_image_file(file):
            image = load_image(file, limits)
            return dict.fromkeys(indices, image)
        found, n = read_frames_at(file, [i for i in indices if i >= 0])
    except (ImageError, VideoError, OSError) as err:
        return dict.fromkeys(indices, f"{file.name}: {err}")
    return {i: found.get(i, f"frame {i} is not in {file.name} ({n} frames)") for i in indices}


def _row(rec: Mapping) -> dict:
    image_id = str(rec["image_id"])
    return {
        "sample_id": CROP_ID_PREFIX[1] + image_id,
        "image_id": image_id,
        "method": rec["method"],
        "mask_source": "",
        "mask_path": None,
        "xray_path": None,
        "ok": False,
        "reason": "",
    }


def _mask_of(
    frame: np.ndarray,
    matrix: np.ndarray,
    crop: np.ndarray,
    mask_frame: np.ndarray | str | None,
    source_frame: np.ndarray | str | None,
    border: str,
) -> tuple[np.ndarray, str]:
    """The mask on ``crop`` (``frame`` aligned by ``matrix``) of a fake whose released mask
    and source frames are given (or the reasons they are not), and how it was made;
    :class:`ForgeryError` says why there is none."""
    size = crop.shape[0]
    if isinstance(mask_frame, np.ndarray):
        if mask_frame.shape[:2] != frame.shape[:2]:
            raise ForgeryError(
                f"the released mask is {mask_frame.shape[1]}x{mask_frame.shape[0]}, the "
                f"fake's frame {frame.shape[1]}x{frame.shape[0]}"
            )
        # outside the frame nothing was manipulated: a black border, not the edge repeated
        mask = released_mask(warp_crop(mask_frame, matrix, size, "constant"))
        if mask.any():
            return mask, RELEASED
    if isinstance(source_frame, np.ndarray):
        if source_frame.shape != frame.shape:
            raise ForgeryError(
                f"the source frame is {source_frame.shape[1]}x{source_frame.shape[0]}, the "
                f"fake's {frame.shape[1]}x{frame.shape[0]}"
            )
        mask = difference_mask(crop, warp_crop(source_frame, matrix, size, border))
        if not mask.any():
            raise ForgeryError("the fake does not differ from its source frame")
        return mask, DIFFERENCE
    why = [f for f in (mask_frame, source_frame) if isinstance(f, str) and f]
    if isinstance(mask_frame, np.ndarray):
        why.insert(0, "the released mask is empty on this frame")
    raise ForgeryError("; ".join(why) or NO_REFERENCE)


def fake_masks(
    sources: pd.DataFrame,
    faces: pd.DataFrame,
    references: pd.DataFrame,
    root: str | Path,
    results_dir: str | Path,
    out_rel: str,
    border: str = DEFAULT_BORDER,
    limits: ImageLimits = DEFAULT_LIMITS,
) -> pd.DataFrame:
    """The masks manifest rows (:data:`~fairforge.columns.IMPORTED_MASK_COLUMNS`, sorted by
    sample id) of the fakes among ``sources`` (a shard's rows: image_id, path, label,
    method, and frame_index for video frames), writing the masks under
    ``{results_dir}/{out_rel}`` (paths relative to ``results_dir``).

    ``faces`` holds the faces rows of those images (image_id, ok, reason, crop_path,
    landmarks; crops relative to ``results_dir``) with the ``matrix`` each frame was aligned
    by (image pixels to crop pixels, six numbers), ``references`` the dataset's
    :data:`~fairforge.columns.FAKE_REFERENCE_COLUMNS`, ``root`` the dataset root the source
    paths start from and ``border`` the faces stage's (config ``faces.border``)."""
    results_dir = Path(results_dir)
    base = image_root(root)
    fakes = sources.loc[sources["label"].to_numpy() == 1].copy()
    fakes["frame_index"] = (
        fakes["frame_index"].fillna(-1).astype(np.int64) if "frame_index" in fakes else -1
    )
    fakes = fakes.merge(references, on="image_id", how="left").merge(
        faces[["image_id", "ok", "reason", "crop_path", "landmarks", "matrix"]].rename(
            columns={"ok": "face_ok", "reason": "face_reason"}
        ),
        on="image_id",
        how="left",
    )
    for column in ("mask_file", "source_file"):
        fakes[column] = fakes[column].fillna("").astype(str)
    fakes["face_ok"] = fakes["face_ok"].astype("boolean").fillna(False).astype(bool)
    rows = []
    # one group per reference pair (a fake video): its frames decoded together
    for (mask_file, source_file), part in fakes.groupby(["mask_file", "source_file"], sort=True):
        indices = sorted(set(part["frame_index"].tolist()))
        masks = reference_frames(mask_file, indices, limits) if mask_file else {}
        sources_at = reference_frames(source_file, indices, limits) if source_file else {}
        for rec in part.to_dict("records"):
            row = _row(rec)
            rows.append(row)
            if not rec["face_ok"]:
                row["reason"] = f"face not usable: {rec.get('face_reason') or 'no faces row'}"
                continue
            if not mask_file and not source_file:
                row["reason"] = NO_REFERENCE
                continue
            try:
                frame = load_image(base / str(rec["path"]), limits)
                crop = read_image(results_dir / str(rec["crop_path"]))
                matrix = np.asarray(rec["matrix"], np.float64).reshape(2, 3)
                if not np.array_equal(warp_crop(frame, matrix, crop.shape[0], border), crop):
                    raise ForgeryError(
                        "the fake's crop is not its frame aligned by the faces stage's "
                        "transform (a stale crop? rerun the faces stage)"
                    )
                index = int(rec["frame_index"])
                mask, how = _mask_of(
                    frame, matrix, crop, masks.get(index), sources_at.get(index), border
                )
                xray = mask_xray(mask, landmarks_array(rec))
            except (ForgeryError, ImageError, ValueError) as err:
                row["reason"] = str(err)
                continue
            stem = f"{out_rel}/{file_stem(row['sample_id'])}"
            write_image(results_dir / f"{stem}_mask.png", mask)
            write_image(results_dir / f"{stem}_xray.png", xray)
            row.update(
                mask_source=how,
                mask_path=f"{stem}_mask.png",
                xray_path=f"{stem}_xray.png",
                ok=True,
            )
    table = pd.DataFrame(rows, columns=IMPORTED_MASK_COLUMNS)
    table["ok"] = table["ok"].astype(bool)
    return table.sort_values("sample_id", kind="mergesort").reset_index(drop=True)


def shard_fake_masks(
    sources: str | Path,
    faces: str | Path,
    transforms: str | Path,
    shard: tuple[str, int],
    dataset: tuple[str, Mapping],
    root: str | Path,
    results_dir: Path,
    out_rel: str,
    border: str = DEFAULT_BORDER,
    limits: ImageLimits = DEFAULT_LIMITS,
) -> pd.DataFrame:
    """:func:`fake_masks` of one shard (``shard``: its index and the shard size) of a
    dataset (``dataset``: its name and its config block): the shard's rows of the sources
    manifest, its faces shard and the transforms beside it, and the references the dataset's
    adapter gives its fakes (:meth:`~fairforge.sources.base.SourceAdapter.fake_references`,
    with the dataset's listing options)."""
    name, block = dataset
    rows = read_shard(sources, shard[0], shard[1])
    if "label" not in rows.columns:  # a dataset of real images only
        rows = rows.assign(label=0, method="real")
    fakes = rows.loc[rows["label"].to_numpy() == 1]
    adapter = ADAPTERS.create(block["adapter"])
    references = adapter.fake_references(fakes, Path(root), **adapter.listing_options(name, block))
    aligned = read_manifest(faces, "faces").merge(
        read_manifest(transforms, "face_transforms"), on="image_id", how="left"
    )
    return fake_masks(fakes, aligned, references, root, results_dir, out_rel, border, limits)
