from fairforge.joblog import logged
from fairforge.manifest import read_manifest
from fairforge.tables.robustness import compression_bpp

# The learned codec's torch takes the job's threads from OMP_NUM_THREADS, which Snakemake
# sets for every script job; JPEG's rates need no torch at all.
with logged(snakemake.log[0]):
    p, variant = snakemake.params, snakemake.wildcards.variant
    columns = ["sample_id", "dataset", "split", "label", "method", "path"]
    samples = read_manifest(snakemake.input[0], contract="samples", columns=columns)
    table = compression_bpp(samples, p.results, variant, p.options, split=p.split)
    table.to_csv(snakemake.output[0], index=False, float_format="%.6g")
    print(f"{variant}: {len(table)} samples, mean {table['bpp'].mean():.4g} bits per pixel")
