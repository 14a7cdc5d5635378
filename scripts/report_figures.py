import pandas as pd

from fairforge.manifest import concat_manifests
from fairforge.report.figures import (
    default_heatmap_metrics,
    failure_figure,
    fairness_heatmap,
    robustness_figure,
    score_distributions,
)
from fairforge.tables import twins_from_frame
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    m = snakemake.params.metrics
    detectors = pd.read_csv(snakemake.input.detectors)
    robustness_figure(
        pd.read_csv(snakemake.input.robustness),
        snakemake.output.robustness,
        twins=twins_from_frame(detectors, "sdaug"),
    )
    fairness_heatmap(
        pd.read_csv(snakemake.input.fairness),
        snakemake.output.heatmap,
        default_heatmap_metrics(m["ur_denominator"]),
    )
    preds = concat_manifests(snakemake.input.predictions, contract="predictions")
    score_distributions(
        preds, snakemake.output.scores, split=m["evaluation_split"], threshold=m["threshold"]
    )
    failure_figure(pd.read_csv(snakemake.input.failures), snakemake.output.failures)
