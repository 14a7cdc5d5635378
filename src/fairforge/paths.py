"""Where a run writes its files: the results root, below every module that names a path."""
from __future__ import annotations

RESULTS = "results"
