import pandas as pd

from fairforge.joblog import logged
from fairforge.report.figures import efficiency_figure

with logged(snakemake.log[0]):
    efficiency = pd.read_csv(snakemake.input.efficiency)
    detection = pd.read_csv(snakemake.input.detection)
    # the average figure's rule gives the detectors' settings: one point per architecture
    families = getattr(snakemake.params, "families", None)
    efficiency_figure(efficiency, detection, snakemake.output[0], families=families)
    print(f"efficiency figure of {len(efficiency)} detector(s) written to {snakemake.output[0]}")
