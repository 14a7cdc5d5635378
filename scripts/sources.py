from fairforge.sources import build_sources
from fairforge.manifest import write_manifest
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    ds = snakemake.params.dataset
    options = dict(ds.get("options", {}))
    if ds["adapter"] == "video":
        options.setdefault("videos", ds["root"])  # frames go to params.root, videos stay put
    frame = build_sources(ds["adapter"], snakemake.params.root, snakemake.wildcards.dataset,
                          group_by=ds.get("group_by"), split_fractions=snakemake.params.split,
                          seed=snakemake.params.seed, **options)
    # One row group per shard: each shard job then reads its rows alone.
    write_manifest(frame, snakemake.output[0], contract="sources",
                   row_group_size=snakemake.params.shard_size)
    print(f"{len(frame)} source images, {int((~frame['ok']).sum())} unusable")
