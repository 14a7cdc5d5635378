import pandas as pd
import torch

from fairforge.detector_kinds import detector_cost
from fairforge.joblog import logged

with logged(snakemake.log[0]):
    torch.set_num_threads(snakemake.threads)  # every core of the job, as declared
    row = detector_cost(
        snakemake.input.model, snakemake.wildcards.detector, device=snakemake.params.device
    )
    pd.DataFrame([row]).to_csv(snakemake.output[0], index=False, float_format="%.6g")
    print(row)
