import pandas as pd

from fairforge.efficiency import checkpoint_efficiency
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    row = checkpoint_efficiency(snakemake.input.model, snakemake.wildcards.detector,
                                device=snakemake.params.device)
    pd.DataFrame([row]).to_csv(snakemake.output[0], index=False, float_format="%.6g")
    print(row)
