from fairforge.images import ImageLimits
from fairforge.joblog import logged
from fairforge.manifest import write_manifest
from fairforge.sharding import shard_image_ids
from fairforge.video import (
    FrameVariantSettings,
    frame_sources,
    frame_variant_samples,
    shard_clip_samples,
)

with logged(snakemake.log[0]):
    i, p, wc = snakemake.input, snakemake.params, snakemake.wildcards
    samples = shard_clip_samples(i.samples, shard_image_ids(i.sources, wc.shard, p.shard_size))
    sources = frame_sources(i.sources, samples["image_id"].unique())
    settings = FrameVariantSettings(
        root=p.root, results_root=p.results, faces=p.faces, limits=ImageLimits(**p.images),
        splits=p.splits, variant_options=p.variant_options, cache_dir=p.cache,
    )  # fmt: skip
    table = frame_variant_samples(
        samples, sources, wc.variant, settings, out_dir=snakemake.output.crops
    )
    write_manifest(table, snakemake.output.manifest, contract="samples")
    print(f"{wc.variant} shard {wc.shard}: {int(table['ok'].sum())}/{len(table)} faces found")
