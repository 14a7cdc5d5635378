from fairforge.manifest import write_manifest
from fairforge.sources import inspect_sources
from fairforge.sources.synthetic import render_listed
from fairforge.sharding import read_shard
from fairforge.workflow import logged, synthetic_options

with logged(snakemake.log[0]):
    p = snakemake.params
    rows = read_shard(snakemake.input[0], snakemake.wildcards.shard, p.shard_size)
    if p.dataset["adapter"] == "synthetic":
        render_listed(rows, p.root, seed=p.seed, **synthetic_options(p.dataset))
    sources = inspect_sources(rows, p.root, workers=snakemake.threads)
    write_manifest(sources, snakemake.output[0], contract="sources")
    print(f"{len(sources)} source images, {int((~sources['ok']).sum())} unusable")
