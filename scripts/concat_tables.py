# Shared by rules failures_per_group and efficiency_table: one csv from many, rows in input order.
import pandas as pd

from fairforge.joblog import logged

with logged(snakemake.log[0]):
    frames = [pd.read_csv(path) for path in snakemake.input]
    pd.concat(frames, ignore_index=True).to_csv(snakemake.output[0], index=False)
