"""RFW (``rfw``, Racial Faces in-the-Wild): identity folders per race.

::

    {root}/{Race}/{subject}/{image}.jpg       Race: African, Asian, Caucasian, Indian

The official archive's ``{root}/data/{Race}`` and ``{root}/test/data/{Race}`` are found too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from fairforge.sources.base import ADAPTERS, SourceAdapter, SourceError, folder_listing

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
