import pandas as pd

from fairforge.joblog import logged
from fairforge.report.figures import training_data_figure

with logged(snakemake.log[0]):
    p = snakemake.params
    robustness = pd.read_csv(snakemake.input[0])
    training_data_figure(robustness, p.families, snakemake.output[0], dataset=p.dataset)
