from fairforge.tables import pvalue_table, table_from_files
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    m = snakemake.params.metrics
    table = table_from_files(
        snakemake.input,
        pvalue_table,
        n_perm=snakemake.params.n_perm,
        seed=snakemake.params.seed,
        threshold=m["threshold"],
        ur_denominator=m["ur_denominator"],
        threshold_rule=m["threshold_rule"],
        eer=m["eer"],
        split=m["evaluation_split"],
    )
    table.to_csv(snakemake.output[0], index=False, float_format="%.6g")
    print(table.to_string(index=False))
