from fairforge.joblog import logged
from fairforge.metrics import Conventions
from fairforge.tables import cross_manipulation_table, per_method_table, table_from_files

with logged(snakemake.log[0]):
    m = snakemake.params.metrics
    per_method = table_from_files(
        snakemake.input,
        per_method_table,
        conventions=Conventions.from_metrics(m),
        split=m["evaluation_split"],
    )
    per_method.to_csv(snakemake.output.per_method, index=False, float_format="%.6g")
    cross = cross_manipulation_table(per_method, snakemake.params.settings)
    cross.to_csv(snakemake.output.cross, index=False, float_format="%.6g")
    print(cross.to_string(index=False))
