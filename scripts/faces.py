from fairforge.faces import detection_rate_by_group
from fairforge.joblog import logged
from fairforge.manifest import concat_manifests, read_manifest, write_manifest

with logged(snakemake.log[0]):
    sources = read_manifest(snakemake.input.sources, contract="sources")
    faces = concat_manifests(snakemake.input.shards, contract="faces")
    missing = set(sources["image_id"]) - set(faces["image_id"])
    if missing:
        raise RuntimeError(
            f"{len(missing)} source images are in no face shard (the dataset "
            f"changed since the shards were planned); rerun snakemake"
        )
    write_manifest(faces.sort_values("image_id"), snakemake.output.manifest, contract="faces")
    rate = detection_rate_by_group(sources, faces)
    rate.to_csv(snakemake.output.rate, index=False)
    print(rate.to_string(index=False))
