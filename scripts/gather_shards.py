# Shared by the gather rules (sources, forgery, predictions, video_variant): shard manifests
# into one, sorted by sample (or image) id.
from fairforge.joblog import logged
from fairforge.manifest import concat_manifests, write_manifest

with logged(snakemake.log[0]):
    frame = concat_manifests(snakemake.input)
    key = "sample_id" if "sample_id" in frame.columns else "image_id"
    # sources keep one row group per shard, which shard jobs read alone
    write_manifest(
        frame.sort_values(key),
        snakemake.output[0],
        row_group_size=snakemake.params.get("row_group_size"),
    )
