from fairforge.joblog import logged
from fairforge.manifest import read_manifest, write_manifest
from fairforge.tables.forgery_quality import measure_method

with logged(snakemake.log[0]):
    i, p = snakemake.input, snakemake.params
    faces = read_manifest(i.faces, contract="faces", columns=["image_id", "crop_path", "landmarks"])
    forgery = read_manifest(i.forgery, contract="forgery")
    fakes = measure_method(
        forgery,
        faces,
        p.results,
        snakemake.wildcards.dataset,
        p.seed,
        identity_per_group=p.identity_per_group,
    )
    write_manifest(fakes, snakemake.output[0])
    print(f"{len(fakes)} fakes measured, {int(fakes['identity_sampled'].sum())} for identity")
