from fairforge.joblog import logged
from fairforge.manifest import columns_in, read_manifest, write_manifest
from fairforge.samples import (
    FACE_INPUTS,
    FORGERY_INPUTS,
    SOURCE_INPUTS,
    SOURCE_OPTIONAL_INPUTS,
    build_samples,
    failure_counts,
    read_masks,
)

with logged(snakemake.log[0]):
    path, dataset = snakemake.input.sources, snakemake.wildcards.dataset
    optional = columns_in(path, SOURCE_OPTIONAL_INPUTS)
    sources = read_manifest(path, "sources", [*SOURCE_INPUTS, *optional])
    faces = read_manifest(snakemake.input.faces, "faces", FACE_INPUTS)
    forgeries = [read_manifest(p, "forgery", FORGERY_INPUTS) for p in snakemake.input.forgeries]
    samples = build_samples(dataset, sources, faces, forgeries, read_masks(snakemake.input.masks))
    write_manifest(samples, snakemake.output.samples, contract="samples")
    failures = failure_counts(sources, faces, forgeries).assign(dataset=dataset)
    failures.to_csv(snakemake.output.failures, index=False)
    print(samples.groupby(["split", "method"]).size().to_string())
