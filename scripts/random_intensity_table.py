import pandas as pd

from fairforge.joblog import logged
from fairforge.tables import random_intensity_table

with logged(snakemake.log[0]):
    robustness = pd.read_csv(snakemake.input[0])
    table = random_intensity_table(robustness, snakemake.params.detectors)
    table.to_csv(snakemake.output[0], index=False, float_format="%.6g")
    print(table.to_string(index=False))
