"""The analysis tables the workflow writes and the report shows, built from predictions (and
from each other), one module per kind of table.

Every table is computed per dataset (samples of different datasets can share ids) and is
evaluated on one split (``test`` by default); the validation split only fits thresholds.

- :mod:`.variants`: what a variant is (operation, level, severity, category), their order,
  which configured variants can be evaluated.
- :mod:`.predictions`: the rows of one split, grouped, read one predictions file at a time.
- :mod:`.detection`: AUC, ACC, AP, EER per detector x dataset x variant, per frame and video.
- :mod:`.methods`: AUC per forgery method; train-on-method x test-on-method AUC.
- :mod:`.robustness`: AUC per operation and level, drop from ``clean``, overall score.
- :mod:`.fairness`: the clean fairness tables (with why a gap cannot be judged), fairness under every variant, permutation
  p-values, per-group thresholds (FairFD Table 5), grayscale (FairFD Table 6).
- :mod:`.detectors`: what trained each detector, its twins, balanced training (FairFD
  Table 4), train-on x test-on generalization, each detector on what it trained on
  (Benchmark Table 4).
- :mod:`.efficiency`: each detector's cost next to its clean AUC.
- :mod:`.forgeries`: forgery and face-detection success per group.
- :mod:`.failures`: every stage's failure rate per group with its interval and the test of
  equal rates; the forgery methods that fell short for a group.
- :mod:`.standing`: which detectors the fairness tables can judge (trained enough, not
  constant).
- :mod:`.face_backends`: every configured face detector per group (which fails whom).
- :mod:`.exposure`: the ranking-exposure tables as the report shows them.

The names below are the ones the scripts, the CLI, the rules and the report import from
``fairforge.tables``.
"""

from fairforge.tables.detection import detection_table
from fairforge.tables.detectors import (
    balanced_table,
    balanced_twins,
    detector_settings_table,
    detector_studies,
    detectors_frame,
    find_twins,
    generalization_table,
    in_domain_table,
    sdaug_twins,
    twins_from_frame,
)
from fairforge.tables.efficiency import EFFICIENCY_AXES, clean_metric, efficiency_with_metric
from fairforge.tables.exposure import exposure_matrix, exposure_summary, most_exposed_groups
from fairforge.tables.face_backends import face_detection_by_backend
from fairforge.tables.failures import (
    failure_rates_table,
    forgery_shortfalls,
    group_dependent_failures,
    read_failures,
)
from fairforge.tables.fairness import (
    fairness_options,
    fairness_outputs,
    fairness_under_perturbation,
    grayscale_table,
    pvalue_table,
    thresholds_from_files,
    thresholds_table,
)
from fairforge.tables.forgeries import (
    crop_outside_cells,
    face_detection_rates,
    forgery_success_table,
    rate_cells,
)
from fairforge.tables.methods import cross_manipulation_table, per_method_table
from fairforge.tables.predictions import evaluation_rows, table_from_files
from fairforge.tables.robustness import (
    random_draw_summary,
    random_intensity_draws,
    random_intensity_table,
    robustness_table,
)
from fairforge.tables.standing import (
    TrainingRecord,
    left_out,
    read_training_log,
    standing_table,
    training_records,
)
from fairforge.tables.variants import (
    GRAYSCALE,
    describe_variant,
    has_video_pipeline,
    sorted_variants,
    split_variants,
    variant_sort_key,
    variant_unavailable_reason,
)

__all__ = [
    "EFFICIENCY_AXES",
    "GRAYSCALE",
    "balanced_table",
    "balanced_twins",
    "detector_studies",
    "clean_metric",
    "cross_manipulation_table",
    "describe_variant",
    "detection_table",
    "detector_settings_table",
    "detectors_frame",
    "efficiency_with_metric",
    "evaluation_rows",
    "exposure_matrix",
    "exposure_summary",
    "crop_outside_cells",
    "face_detection_by_backend",
    "failure_rates_table",
    "face_detection_rates",
    "fairness_options",
    "fairness_outputs",
    "fairness_under_perturbation",
    "find_twins",
    "forgery_shortfalls",
    "forgery_success_table",
    "generalization_table",
    "group_dependent_failures",
    "grayscale_table",
    "has_video_pipeline",
    "in_domain_table",
    "left_out",
    "most_exposed_groups",
    "per_method_table",
    "pvalue_table",
    "read_failures",
    "read_training_log",
    "rate_cells",
    "random_draw_summary",
    "random_intensity_draws",
    "random_intensity_table",
    "robustness_table",
    "sdaug_twins",
    "sorted_variants",
    "split_variants",
    "standing_table",
    "table_from_files",
    "thresholds_from_files",
    "thresholds_table",
    "training_records",
    "TrainingRecord",
    "twins_from_frame",
    "variant_sort_key",
    "variant_unavailable_reason",
]
