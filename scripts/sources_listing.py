from fairforge.manifest import write_manifest
from fairforge.sources import SourceError, get_adapter, list_sources
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    name, ds = snakemake.wildcards.dataset, snakemake.params.dataset
    adapter = get_adapter(ds["adapter"])
    listing = list_sources(
        ds["adapter"],
        snakemake.params.root,
        name,
        group_by=ds.get("group_by"),
        split=snakemake.params.split,
        seed=snakemake.params.seed,
        **adapter.listing_options(name, ds),
    )
    # The plan made one shard job per shard_size rows of this count: rows past it would
    # belong to no job and vanish from every later stage.
    planned = adapter.count_items(name, ds)
    if len(listing) > planned:
        raise SourceError(
            f"datasets.{name}: {len(listing)} images listed but only {planned} "
            "planned; rerun so that the plan counts them again"
        )
    # One row group per shard: each shard job then reads its rows alone.
    write_manifest(listing, snakemake.output[0], row_group_size=snakemake.params.shard_size)
    print(f"{len(listing)} images listed, {int((~listing['ok']).sum())} without a label")
