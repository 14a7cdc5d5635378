"""External detectors as score files.

A detector run elsewhere enters as a parquet or csv file with ``sample_id`` and ``score``
(probability of fake, in [0, 1]) and optionally ``variant``. It is checked against the samples
manifest: every sample of the requested splits needs exactly one score, and every scored id must
be a sample of the manifest (ids of other splits are ignored). The result is the predictions
contract, like a network's predictions. Such a detector is registered as the one ``external``
detector: nothing is trained, run or timed here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.columns import PREDICTION_COLUMNS
from fairforge.detectors.base import DETECTORS


class ScoreFileError(ValueError):
    pass


def _few(ids, limit: int = 5) -> str:
    ids = sorted(map(str, ids))
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


def read_scores(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise ScoreFileError(f"score file not found: {path}")
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    if path.suffix in (".csv", ".gz"):
        return pd.read_csv(path, dtype={"sample_id": str})
    raise ScoreFileError(f"{path}: score files are .parquet or .csv")


def external_predictions(
    scores: str | Path | pd.DataFrame,
    samples: pd.DataFrame,
    detector: str,
    variant: str = "clean",
    splits=("val", "test"),
) -> pd.DataFrame:
    """Validate a score file against ``samples`` and return predictions for ``splits``."""
    where = str(scores) if not isinstance(scores, pd.DataFrame) else "score frame"
    table = scores if isinstance(scores, pd.DataFrame) else read_scores(scores)
    lacking = [c for c in ("sample_id", "score") if c not in table.columns]
    if lacking:
        raise ScoreFileError(f"{where} lacks column(s) {lacking}; needs sample_id and score")
    if "dataset" in table.columns and "dataset" in samples.columns:
        # one file may score several datasets: keep this one's rows
        table = table.loc[table["dataset"].isin(samples["dataset"].unique())]
    if "variant" in table.columns:
        table = table.loc[table["variant"] == variant]
        if table.empty:
            raise ScoreFileError(f"{where} has no rows for variant {variant!r}")
    ids = table["sample_id"].astype(str)
    dup = ids[ids.duplicated()].unique()
    if len(dup):
        raise ScoreFileError(f"{where} scores {len(dup)} sample(s) more than once: {_few(dup)}")
    unknown = sorted(set(ids) - set(samples["sample_id"].astype(str)))
    if unknown:
        raise ScoreFileError(
            f"{where} has {len(unknown)} sample_id(s) not in the samples manifest: {_few(unknown)}"
        )
    frame = samples.loc[samples["split"].isin(list(splits))]
    frame = frame.sort_values("sample_id").reset_index(drop=True)
    missing = sorted(set(frame["sample_id"].astype(str)) - set(ids))
    if missing:
        raise ScoreFileError(
            f"{where} has no score for {len(missing)} sample(s) of splits "
            f"{list(splits)}: {_few(missing)}"
        )
    score = pd.to_numeric(table["score"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~(np.isfinite(score) & (score >= 0.0) & (score <= 1.0))
    if bad.any():
        raise ScoreFileError(
            f"{where} has {int(bad.sum())} score(s) outside [0, 1] or not a "
            f"number, e.g. for {_few(ids[bad])}"
        )
    by_id = pd.Series(score.astype(np.float32), index=ids.to_numpy())
    out = frame[[c for c in PREDICTION_COLUMNS if c in frame.columns]].copy()
    out["detector"] = detector
    out["variant"] = variant
    out["score"] = by_id.loc[frame["sample_id"].astype(str).to_numpy()].to_numpy(np.float32)
    extra = [c for c in ("video_id",) if c in frame.columns]
    return out[PREDICTION_COLUMNS + extra]


@DETECTORS.register("external", kind="external")
class ScoreFile:
    """An external detector: the score file it brought, scored against a samples manifest."""

    def __init__(self, path: str | Path | pd.DataFrame):
        self.path = path

    def predictions(
        self, samples: pd.DataFrame, detector: str, variant: str = "clean", splits=("val", "test")
    ) -> pd.DataFrame:
        return external_predictions(self.path, samples, detector, variant, splits)
