from fairforge.manifest import read_manifest, write_manifest
from fairforge.samples import build_samples, failure_counts
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    sources = read_manifest(snakemake.input.sources, contract="sources")
    faces = read_manifest(snakemake.input.faces, contract="faces")
    forgeries = [read_manifest(p, contract="forgery") for p in snakemake.input.forgeries]
    samples = build_samples(snakemake.wildcards.dataset, sources, faces, forgeries)
    write_manifest(samples, snakemake.output.samples, contract="samples")
    failure_counts(sources, faces, forgeries).assign(
        dataset=snakemake.wildcards.dataset).to_csv(snakemake.output.failures, index=False)
    print(samples.groupby(["split", "method"]).size().to_string())
