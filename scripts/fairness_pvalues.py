from fairforge.joblog import logged
from fairforge.manifest import concat_manifests
from fairforge.metrics import Conventions
from fairforge.tables import pvalue_table

with logged(snakemake.log[0]):
    m = snakemake.params.metrics
    # all detectors at once: the paired comparisons resample their subjects together
    table = pvalue_table(
        concat_manifests(snakemake.input, contract="predictions"),
        n_perm=snakemake.params.n_perm,
        seed=snakemake.params.seed,
        conventions=Conventions.from_metrics(m),
        split=m["evaluation_split"],
    )
    table.to_csv(snakemake.output[0], index=False, float_format="%.6g")
    print(table.to_string(index=False))
