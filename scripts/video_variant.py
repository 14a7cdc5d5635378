from pathlib import Path

from fairforge.manifest import read_manifest, write_manifest
from fairforge.video import video_variant_samples
from fairforge.workflow import RESULTS, logged

with logged(snakemake.log[0]):
    variant = snakemake.wildcards.variant
    samples = read_manifest(snakemake.input[0], contract="samples")
    frames = video_variant_samples(samples, variant, results_root=RESULTS,
                                   out_dir=snakemake.output.frames,
                                   cache_dir=snakemake.params.cache,
                                   splits=snakemake.params.splits, workers=snakemake.threads)
    Path(snakemake.output.frames).mkdir(parents=True, exist_ok=True)
    write_manifest(frames, snakemake.output.manifest, contract="samples")
    failed = int((~frames["ok"]).sum())
    print(f"{variant}: {len(frames)} samples, {failed} in failed clips")
