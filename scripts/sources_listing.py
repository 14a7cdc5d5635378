from fairforge.manifest import write_manifest
from fairforge.sources import list_sources
from fairforge.workflow import logged, synthetic_options

with logged(snakemake.log[0]):
    ds = snakemake.params.dataset
    options = dict(ds.get("options", {}))
    if ds["adapter"] == "video":
        options.setdefault("videos", ds["root"])  # frames go to params.root, videos stay put
    if ds["adapter"] == "synthetic":
        # the sizes the plan counted shards with; the shard jobs render the images
        options = {**synthetic_options(ds), "render": False}
    listing = list_sources(ds["adapter"], snakemake.params.root, snakemake.wildcards.dataset,
                           group_by=ds.get("group_by"), split_fractions=snakemake.params.split,
                           seed=snakemake.params.seed, **options)
    # One row group per shard: each shard job then reads its rows alone.
    write_manifest(listing, snakemake.output[0], row_group_size=snakemake.params.shard_size)
    print(f"{len(listing)} images listed, {int((~listing['ok']).sum())} without a label")
