from fairforge.joblog import logged
from fairforge.report import paths_from_rule_inputs, write_report

with logged(snakemake.log[0]):
    p = snakemake.params
    run = {
        "datasets": p.datasets,
        "variants": p.variants,
        "variant_options": p.variant_options,
        "metrics": p.metrics,
        "ranking": p.ranking,
    }
    write_report(snakemake.output[0], paths_from_rule_inputs(snakemake.input.items()), run)
    print(f"report written to {snakemake.output[0]}")
