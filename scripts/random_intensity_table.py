import pandas as pd

from fairforge.joblog import logged
from fairforge.report.figures import random_intensity_figure
from fairforge.tables import random_draw_summary, random_intensity_table

with logged(snakemake.log[0]):
    i, p = snakemake.input, snakemake.params
    robustness = pd.read_csv(i.robustness)
    draws = pd.concat(
        [
            random_draw_summary(pd.read_csv(path, keep_default_na=False), dataset, p.options)
            for dataset, path in zip(p.datasets, i.draws)
        ],
        ignore_index=True,
    )
    table = random_intensity_table(
        robustness, p.detectors, draws=draws, average_excludes=p.average_excludes
    )
    table.to_csv(snakemake.output.table, index=False, float_format="%.6g")
    random_intensity_figure(table, snakemake.output.figure)
    print(table.to_string(index=False))
