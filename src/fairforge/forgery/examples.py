"""The example sheet of FairFD's Figure 2: per group, a source, its target, every method's
fake, the fake's manipulation mask, and what the fake changed: ``|fake - kept|`` (mean over
RGB, times :data:`DIFF_GAIN`, as a heat map) against the image it was composited into (the
target for identity replacement, the source otherwise), so the methods' differences show."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from fairforge.images import read_image, write_image

from .base import FORGERY_METHODS, method_key

BACKGROUND = 255
DIFF_GAIN = 4.0  # grey levels of change -> heat-map intensity


def _diff_tile(fake: Path, kept: Path, size: int) -> np.ndarray:
    a, b = read_image(fake), read_image(kept)
    if a.shape != b.shape:
        return np.full((size, size, 3), BACKGROUND, np.uint8)
    diff = np.abs(a.astype(np.int16) - b.astype(np.int16)).mean(2) * DIFF_GAIN
    heat = cv2.applyColorMap(np.clip(diff, 0, 255).astype(np.uint8), cv2.COLORMAP_INFERNO)
    heat = cv2.cvtColor(heat, cv2.COLOR_BGR2RGB)
    return cv2.resize(heat, (size, size), interpolation=cv2.INTER_AREA)


def _tile(path: Path | None, size: int, gray: bool = False) -> np.ndarray:
    if path is None:
        return np.full((size, size, 3), BACKGROUND, np.uint8)
    img = read_image(path)
    return cv2.resize(img, (size, size), interpolation=cv2.INTER_AREA)


def _label(text: str, width: int, height: int = 22) -> np.ndarray:
    band = np.full((height, width, 3), BACKGROUND, np.uint8)
    cv2.putText(
        band, text, (4, height - 7), cv2.FONT_HERSHEY_SIMPLEX, 0.42, (0, 0, 0), 1, cv2.LINE_AA
    )
    return band


def example_sheet(
    faces: pd.DataFrame,
    forgeries: dict[str, pd.DataFrame],
    results_dir: str | Path,
    out_path: str | Path,
    tile: int = 112,
) -> pd.DataFrame:
    """Write the sheet; return which source image was shown for each group.

    ``faces`` needs image_id, group and crop_path; each forgery manifest image_id,
    target_image_id, path, mask_path and ok. A group's example is its first source image
    (by id) that every method forged successfully, else the one most methods forged.
    """
    root = Path(results_dir)
    methods = sorted(forgeries)
    crops = faces.set_index("image_id")["crop_path"]
    ok_by_method = {
        m: f.loc[f["ok"].astype(bool)].set_index("image_id") for m, f in forgeries.items()
    }
    rows, shown = [], []
    columns = ["source", "target", *methods]
    header = np.hstack([_label(c, tile) for c in columns])
    for group, part in faces.loc[faces["ok"].astype(bool)].groupby("group", sort=True):
        ids = sorted(part["image_id"])
        counts = [sum(i in ok_by_method[m].index for m in methods) for i in ids]
        if not ids or max(counts) == 0:
            continue
        image_id = ids[int(np.argmax(counts))]  # first id with the most successes
        target = next(
            (
                ok_by_method[m].loc[image_id, "target_image_id"]
                for m in methods
                if image_id in ok_by_method[m].index
                and isinstance(ok_by_method[m].loc[image_id, "target_image_id"], str)
            ),
            None,
        )
        fakes, masks, diffs = [], [], []
        for m in methods:
            row = ok_by_method[m].loc[image_id] if image_id in ok_by_method[m].index else None
            fakes.append(_tile(root / row["path"] if row is not None else None, tile))
            masks.append(_tile(root / row["mask_path"] if row is not None else None, tile))
            diffs.append(_tile(None, tile))
            if row is not None:
                key = method_key(m, str(row.get("backend") or "classical"))
                kept_id = (
                    row["target_image_id"]
                    if key in FORGERY_METHODS and FORGERY_METHODS.metadata(key)["kept"] == "target"
                    else image_id
                )
                if isinstance(kept_id, str) and kept_id in crops.index:
                    diffs[-1] = _diff_tile(root / row["path"], root / crops[kept_id], tile)
        blank = _tile(None, tile)
        rows.append(
            _label(
                f"group {group}  ({image_id}): fakes, masks, change x{DIFF_GAIN:g}",
                tile * len(columns),
            )
        )
        rows.append(
            np.hstack(
                [
                    _tile(root / crops[image_id], tile),
                    _tile(root / crops[target], tile) if target else blank,
                    *fakes,
                ]
            )
        )
        rows.append(np.hstack([blank, blank, *masks]))
        rows.append(np.hstack([blank, blank, *diffs]))
        shown.append({"group": group, "image_id": image_id, "target_image_id": target})
    if not rows:
        raise ValueError("no group has a forged example to show")
    write_image(out_path, np.vstack([header, *rows]))
    return pd.DataFrame(shown)
