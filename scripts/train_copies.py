from pathlib import Path

from fairforge.joblog import logged
from fairforge.manifest import read_manifest, write_manifest
from fairforge.video import compressed_copies

with logged(snakemake.log[0]):
    p, out = snakemake.params, snakemake.output
    samples = read_manifest(snakemake.input[0], "samples")
    copies = compressed_copies(
        samples, p.variant, results_root=p.results, out_dir=out.images, cache_dir=p.cache
    )
    Path(out.images).mkdir(parents=True, exist_ok=True)
    write_manifest(copies, out.samples, contract="samples")
    changed = int((copies["path"] != samples["path"]).sum())
    print(f"{p.variant}: {changed} of {len(samples)} crops copied (the train split)")
