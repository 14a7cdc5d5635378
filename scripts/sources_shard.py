import fairforge.video  # noqa: F401  (registers the frame sampler and synthetic_video)
from fairforge.images import ImageLimits
from fairforge.joblog import logged
from fairforge.manifest import write_manifest
from fairforge.sharding import read_shard
from fairforge.sources import ADAPTERS, inspect_sources

with logged(snakemake.log[0]):
    p = snakemake.params
    rows = read_shard(snakemake.input[0], snakemake.wildcards.shard, p.shard_size)
    ADAPTERS.create(p.dataset["adapter"]).prepare_shard(
        rows, p.root, seed=p.seed, name=snakemake.wildcards.dataset, dataset_cfg=p.dataset
    )
    sources = inspect_sources(rows, p.root, snakemake.threads, ImageLimits(**p.images))
    write_manifest(sources, snakemake.output[0], contract="sources")
    print(f"{len(sources)} source images, {int((~sources['ok']).sum())} unusable")
