"""How the report writes numbers and conventions in words, on the page and in the verdict."""

from __future__ import annotations

import numpy as np


def format_number(value) -> str:
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            return "–"
        return f"{value:.4g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"
    return str(value)


def ur_convention(ur_denominator: str) -> str:
    if ur_denominator == "acc":
        return (
            "UR metrics divide each approach's gap by its mean accuracy over groups "
            "(d_f = mean accuracy; FairFD equation 3 and Table 5(b)); their names end in _acc."
        )
    return (
        "UR metrics divide each approach's gap by 1 + its mean accuracy over groups "
        "(d_f = 1 + mean accuracy; FairFD Table 3 and its public code); their names end "
        "in _one_plus_acc."
    )
