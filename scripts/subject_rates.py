from fairforge.joblog import logged
from fairforge.metrics import Conventions
from fairforge.report import figures
from fairforge.tables import table_from_files
from fairforge.tables.features import subject_rates_table

with logged(snakemake.log[0]):
    m = snakemake.params.metrics
    table = table_from_files(
        snakemake.input,
        subject_rates_table,
        conventions=Conventions.from_metrics(m),
        split=m["evaluation_split"],
    )
    table.to_csv(snakemake.output.table, index=False, float_format="%.6g")
    figures.subject_rates_figure(table, snakemake.output.figure)
    print(f"{len(table)} subjects x detectors")
