import pandas as pd

from fairforge.joblog import logged
from fairforge.manifest import read_manifest
from fairforge.tables import in_domain_table

with logged(snakemake.log[0]):
    m = snakemake.params.metrics
    preds = pd.concat(
        [read_manifest(path, contract="predictions") for path in snakemake.input],
        ignore_index=True,
    )
    table = in_domain_table(
        preds,
        snakemake.params.settings,
        snakemake.params.datasets,
        average_excludes=m["average_excludes"],
        split=m["evaluation_split"],
    )
    table.to_csv(snakemake.output[0], index=False, float_format="%.6g")
    print(table.to_string(index=False))
