from fairforge.joblog import logged
from fairforge.manifest import columns_in, read_manifest, write_manifest
from fairforge.samples import (
    FACE_INPUTS,
    FORGERY_INPUTS,
    SOURCE_INPUTS,
    SOURCE_OPTIONAL_INPUTS,
    method_samples,
    read_masks,
)

with logged(snakemake.log[0]):
    path, wc = snakemake.input.sources, snakemake.wildcards
    optional = columns_in(path, SOURCE_OPTIONAL_INPUTS)
    sources = read_manifest(path, "sources", [*SOURCE_INPUTS, *optional])
    faces = read_manifest(snakemake.input.faces, "faces", FACE_INPUTS)
    forgery = snakemake.input.get("forgery")
    forgery = read_manifest(forgery, "forgery", FORGERY_INPUTS) if forgery else None
    masks = read_masks([snakemake.input.masks] if snakemake.input.get("masks") else [])
    samples = method_samples(wc.dataset, wc.method, sources, faces, forgery, masks)
    write_manifest(samples, snakemake.output[0], contract="samples")
    print(samples.groupby("split").size().to_string())
