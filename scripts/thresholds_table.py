from fairforge.joblog import logged
from fairforge.tables import thresholds_from_files

with logged(snakemake.log[0]):
    table = thresholds_from_files(
        snakemake.input, snakemake.params.metrics, snakemake.params.splits
    )
    table.to_csv(snakemake.output[0], index=False, float_format="%.6g")
    print(table.to_string(index=False))
