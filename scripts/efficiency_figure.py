import pandas as pd

from fairforge.joblog import logged
from fairforge.report.figures import efficiency_figure

with logged(snakemake.log[0]):
    efficiency = pd.read_csv(snakemake.input.efficiency)
    detection = pd.read_csv(snakemake.input.detection)
    efficiency_figure(efficiency, detection, snakemake.output[0])
    print(f"efficiency figure of {len(efficiency)} detector(s) written to {snakemake.output[0]}")
