from fairforge.inference import predict
from fairforge.manifest import read_manifest, write_manifest
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    inf = snakemake.params.inference
    samples = read_manifest(snakemake.input.samples, contract="samples")
    preds = predict(snakemake.input.model, samples, "results", snakemake.wildcards.detector,
                    variant=snakemake.wildcards.variant, splits=inf["splits"],
                    batch_size=inf["batch_size"], num_workers=inf["num_workers"],
                    device=snakemake.params.device, threads=snakemake.threads)
    write_manifest(preds, snakemake.output[0], contract="predictions")
