from fairforge.manifest import concat_manifests, write_manifest
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    frame = concat_manifests(snakemake.input)
    key = "sample_id" if "sample_id" in frame.columns else "image_id"
    write_manifest(frame.sort_values(key), snakemake.output[0])
