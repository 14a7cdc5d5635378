"""Detection quality: AUC, ACC, AP, EER per detector x dataset x variant, per frame and,
where ``video_id`` exists, per video (mean frame score), of the real images against the
dataset's own fakes: fakes generated for training (SBI's, Face X-ray's and FWA's,
:func:`fairforge.forgery.base.training_methods`) are left out of these rows and scored in
their own, per method (:func:`fairforge.tables.methods.per_method_table`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairforge.forgery import training_methods
from fairforge.metrics.conventions import DEFAULT_CONVENTIONS, Conventions
from fairforge.metrics.detection import detection_metrics, video_level
from fairforge.tables.predictions import evaluation_rows, groups_of
from fairforge.tables.variants import order_rows


def _video_frames(part: pd.DataFrame) -> pd.DataFrame | None:
    """Frames that belong to a video, keyed so that a fake clip and its source clip (which
    share the source's ``video_id``) count as two videos."""
    if "video_id" not in part.columns:
        return None
    frames = part.loc[part["video_id"].notna()]
    if frames.empty:
        return None
    return frames.assign(
        video_key=frames["method"].astype(str) + "/" + frames["video_id"].astype(str)
    )


def detection_table(
    preds: pd.DataFrame,
    conventions: Conventions = DEFAULT_CONVENTIONS,
    split: str | None = "test",
) -> pd.DataFrame:
    """AUC, ACC (at the threshold), AP, EER and counts per dataset x detector x variant,
    under ``conventions`` (:class:`~fairforge.metrics.conventions.Conventions`).

    ``unit`` is ``frame`` (every prediction) or ``video`` (one score per video, the mean of
    its frame scores; only where ``video_id`` exists). Counts are of frames or videos. Fakes
    made for training (:func:`~fairforge.forgery.base.training_methods`) are not the
    dataset's: they are left out here.
    """
    c = conventions
    rows = []
    scored = evaluation_rows(preds, split)
    scored = scored.loc[~scored["method"].isin(training_methods())]
    for (dataset, detector, variant), part in groups_of(scored):
        base = {"dataset": dataset, "detector": detector, "variant": variant}
        rows.append(
            {
                **base,
                "unit": "frame",
                **detection_metrics(
                    part["label"].to_numpy(),
                    part["score"].to_numpy(),
                    c.threshold,
                    c.threshold_rule,
                    c.eer,
                ),
            }
        )
        frames = _video_frames(part)
        if frames is not None:
            rows.append(
                {
                    **base,
                    "unit": "video",
                    **video_level(
                        frames,
                        video_col="video_key",
                        threshold=c.threshold,
                        threshold_rule=c.threshold_rule,
                        eer=c.eer,
                    ),
                }
            )
    if not rows:
        raise ValueError(f"no predictions of split {split!r}")
    table = order_rows(pd.DataFrame(rows), ("dataset", "detector", "unit"))
    for col in ("n", "n_real", "n_fake"):
        table[col] = table[col].astype(np.int64)
    return table
