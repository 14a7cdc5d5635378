from fairforge.report import write_report
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    paths = dict(snakemake.input.items())
    run = {"datasets": snakemake.params.datasets, "variants": snakemake.params.variants,
           "metrics": snakemake.params.metrics}
    write_report(snakemake.output[0], paths, run)
    print(f"report written to {snakemake.output[0]}")
