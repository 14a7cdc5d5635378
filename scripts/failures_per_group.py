from fairforge.joblog import logged
from fairforge.tables import failure_rates_table, read_failures

with logged(snakemake.log[0]):
    table = failure_rates_table(read_failures(snakemake.input), seed=snakemake.params.seed)
    table.to_csv(snakemake.output[0], index=False)
    print(table.to_string(index=False))
