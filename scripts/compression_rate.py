import pandas as pd

from fairforge.joblog import logged
from fairforge.report.figures import compression_rate_figure
from fairforge.tables.robustness import compression_rate_table

with logged(snakemake.log[0]):
    i, o = snakemake.input, snakemake.output
    bpp = pd.concat([pd.read_csv(path) for path in i.bpp], ignore_index=True)
    table = compression_rate_table(pd.read_csv(i.robustness), bpp)
    table.to_csv(o.table, index=False, float_format="%.6g")
    compression_rate_figure(table, o.figure, dataset=snakemake.params.dataset)
    print(table.to_string(index=False))
