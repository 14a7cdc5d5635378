from fairforge.joblog import logged
from fairforge.manifest import read_manifest
from fairforge.plotting import save_png
from fairforge.report.figures import detection_under_perturbation_figure
from fairforge.video import detection_under_perturbation

with logged(snakemake.log[0]):
    variants = snakemake.params.variants
    tables = {v: read_manifest(path) for v, path in zip(variants, snakemake.input)}
    table = detection_under_perturbation(tables)
    table.to_csv(snakemake.output.table, index=False)
    save_png(detection_under_perturbation_figure(table), snakemake.output.figure)
    print(table.to_string(index=False))
