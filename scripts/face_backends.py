from fairforge.faces.compare import compare_backends, compare_options
from fairforge.images import ImageLimits
from fairforge.joblog import logged
from fairforge.manifest import read_manifest
from fairforge.report.figures import face_backends_figure
from fairforge.tables import face_detection_by_backend

with logged(snakemake.log[0]):
    p, out = snakemake.params, snakemake.output
    sources = read_manifest(snakemake.input[0], contract="sources")
    options = compare_options(p.faces)
    limits = ImageLimits(**p.images)
    outcomes = compare_backends(sources, p.root, limits=limits, **options)
    outcomes.to_parquet(out.outcomes, index=False)
    table = face_detection_by_backend(outcomes, sources, options["backends"], p.n_boot, p.seed)
    table.to_csv(out.table, index=False)
    face_backends_figure(table, out.figure, snakemake.wildcards.dataset)
    print(table.to_string(index=False))
