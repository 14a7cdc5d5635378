from pathlib import Path

from fairforge.images import ImageLimits
from fairforge.joblog import logged
from fairforge.manifest import write_manifest
from fairforge.sharding import shard_image_ids
from fairforge.video import (
    FrameVariantSettings,
    frame_sources,
    shard_clip_samples,
    video_variant_rows,
)

with logged(snakemake.log[0]):
    i, p, wc, out = snakemake.input, snakemake.params, snakemake.wildcards, snakemake.output
    samples = shard_clip_samples(i.samples, shard_image_ids(i.sources, wc.shard, p.shard_size))
    settings = FrameVariantSettings(root=p.root, results_root=p.results, faces=p.faces,
        limits=ImageLimits(**p.images), splits=p.splits, cache_dir=p.cache)  # fmt: skip
    frames = video_variant_rows(samples, frame_sources(i.sources, samples["image_id"].unique()),
        wc.variant, settings, out_dir=out.frames, workers=snakemake.threads)  # fmt: skip
    Path(out.frames).mkdir(parents=True, exist_ok=True)
    write_manifest(frames, out.manifest, contract="samples")
    print(f"{wc.variant} shard {wc.shard}: {len(frames)} samples, {(~frames['ok']).sum()} not ok")
