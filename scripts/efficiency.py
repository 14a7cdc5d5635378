import pandas as pd
import torch

from fairforge.detector_kinds import detector_costs
from fairforge.joblog import logged

with logged(snakemake.log[0]):
    torch.set_num_threads(snakemake.threads)  # every core of the job, the same for each detector
    models = dict(zip(snakemake.params.detectors, snakemake.input.models, strict=True))
    rows = detector_costs(models, device=snakemake.params.device)
    pd.DataFrame(rows).to_csv(snakemake.output[0], index=False, float_format="%.6g")
    for row in rows:
        print(row)
