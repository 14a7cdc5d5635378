from fairforge.joblog import logged
from fairforge.metrics import Conventions
from fairforge.tables import fairness_under_perturbation, grayscale_table, table_from_files

with logged(snakemake.log[0]):
    m = snakemake.params.metrics
    table = table_from_files(
        snakemake.input,
        fairness_under_perturbation,
        conventions=Conventions.from_metrics(m),
        split=m["evaluation_split"],
    )
    table.to_csv(snakemake.output.table, index=False, float_format="%.6g")
    grayscale_table(table).to_csv(snakemake.output.grayscale, index=False, float_format="%.6g")
    print(table.to_string(index=False))
