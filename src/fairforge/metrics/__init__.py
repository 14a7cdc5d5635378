"""Metrics as plain functions over arrays and prediction frames (docs/metrics.md sections 2-5, 8, 11).

- :mod:`.conventions`: the threshold, its rule, the EER method and the UR denominator of a
  run, as one :class:`~.conventions.Conventions` that the frame-level functions take.
- :mod:`.detection`: AUC, ACC, AP, EER, frame and video level.
- :mod:`.fairness`: FairFD accuracy-matrix metrics (naive, AA, UR) and textbook pooled metrics;
  ``fairness_report`` / ``fairness_table`` / ``per_group_long`` over a predictions frame.
- :mod:`.resampling`: the subject-level bootstrap and jackknife of the count-based metrics.
- :mod:`.intervals`: bootstrap intervals (basic, BCa, percentile, and the reported one).
- :mod:`.inversion`: intervals of the gap metrics by test inversion.
- :mod:`.significance`: permutation p-values of the gaps and paired comparisons of detectors.
- :mod:`.thresholds`: per-group thresholds fitted on validation data.
- :mod:`.multiplicity`: Holm's adjustment of p-values.
- :mod:`.rates`: the Wilson interval of a rate and the test of equal rates across groups
  (section 11).
- :mod:`.exposure`: visibility and exposure of groups in face rankings.
- :mod:`.subjects`: true-positive and true-negative rates per subject (FairFD Fig. 5).
- :mod:`.mmd`: maximum mean discrepancy between feature samples, RBF kernel with the median
  heuristic (FairFD Fig. 7).
"""

from .conventions import DEFAULT_CONVENTIONS, Conventions
from .detection import acc, ap, auc, detection_metrics, eer, roc_points, video_level, video_scores
from .fairness import (
    accuracy_matrix,
    fairfd_metrics,
    fairness_reasons,
    fairness_report,
    fairness_table,
    group_rates,
    metric_reasons,
    metrics_from_cell_counts,
    per_group_long,
    per_group_table,
    textbook_metrics,
)
from .intervals import bootstrap_intervals, bootstrap_table
from .resampling import (
    SubjectStats,
    bootstrap_replicates,
    stats_from_frame,
    subject_resample_indices,
    subject_stats,
)
from .significance import permutation_pvalue, permutation_pvalues
from .thresholds import (
    apply_group_thresholds,
    best_threshold,
    compare_thresholds,
    fit_group_thresholds,
)

__all__ = [
    "Conventions",
    "DEFAULT_CONVENTIONS",
    "acc",
    "ap",
    "auc",
    "detection_metrics",
    "eer",
    "roc_points",
    "video_level",
    "video_scores",
    "accuracy_matrix",
    "fairfd_metrics",
    "fairness_reasons",
    "fairness_report",
    "fairness_table",
    "group_rates",
    "metrics_from_cell_counts",
    "metric_reasons",
    "per_group_long",
    "per_group_table",
    "textbook_metrics",
    "apply_group_thresholds",
    "best_threshold",
    "compare_thresholds",
    "fit_group_thresholds",
    "SubjectStats",
    "bootstrap_intervals",
    "bootstrap_replicates",
    "bootstrap_table",
    "permutation_pvalue",
    "permutation_pvalues",
    "stats_from_frame",
    "subject_resample_indices",
    "subject_stats",
]
