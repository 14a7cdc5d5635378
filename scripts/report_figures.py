import pandas as pd

from fairforge.joblog import logged
from fairforge.manifest import concat_manifests
from fairforge.metrics import Conventions
from fairforge.report import figures
from fairforge.tables import twins_from_frame

with logged(snakemake.log[0]):
    i, o, m = snakemake.input, snakemake.output, snakemake.params.metrics
    twins = twins_from_frame(pd.read_csv(i.detectors), "sdaug")
    figures.robustness_figure(pd.read_csv(i.robustness), o.robustness, twins=twins)
    conventions = Conventions.from_metrics(m)
    heatmap_metrics = figures.default_heatmap_metrics(conventions)
    figures.fairness_heatmap(pd.read_csv(i.fairness), o.heatmap, heatmap_metrics)
    preds = concat_manifests(i.predictions, contract="predictions")
    figures.score_distributions(
        preds, o.scores, split=m["evaluation_split"], threshold=conventions.threshold
    )
    figures.failure_figure(pd.read_csv(i.failures), o.failures)
