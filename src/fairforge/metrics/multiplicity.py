"""Multiple-comparison adjustment (docs/metrics.md sections 4 and 9).

Holm's step-down method controls the family-wise error rate for any dependence between the
tests: sort the m p-values, multiply the i-th smallest (i = 0..m-1) by (m − i), take the
running maximum so the adjusted values keep the order of the raw ones, and cap at 1.
"""

from __future__ import annotations

import numpy as np


def holm_adjust(pvalues) -> np.ndarray:
    """Holm-adjusted p-values in the order given. NaN p-values (tests that could not be run)
    stay NaN and do not count towards the number of comparisons m."""
    p = np.asarray(pvalues, dtype=np.float64).reshape(-1)
    out = np.full(p.shape, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    m = finite.size
    if m == 0:
        return out
    order = finite[np.argsort(p[finite], kind="stable")]
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out
