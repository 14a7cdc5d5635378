from pathlib import Path

from fairforge.joblog import logged
from fairforge.manifest import write_manifest
from fairforge.sharding import shard_image_ids
from fairforge.video import shard_clip_samples, video_variant_samples

with logged(snakemake.log[0]):
    p, wc = snakemake.params, snakemake.wildcards
    ids = shard_image_ids(snakemake.input.sources, wc.shard, p.shard_size)
    samples = shard_clip_samples(snakemake.input.samples, ids)
    frames = video_variant_samples(
        samples,
        wc.variant,
        results_root=p.results,
        out_dir=snakemake.output.frames,
        cache_dir=p.cache,
        splits=p.splits,
        workers=snakemake.threads,
    )
    Path(snakemake.output.frames).mkdir(parents=True, exist_ok=True)
    write_manifest(frames, snakemake.output.manifest, contract="samples")
    failed = int((~frames["ok"]).sum())
    print(f"{wc.variant} shard {wc.shard}: {len(frames)} samples, {failed} in failed clips")
