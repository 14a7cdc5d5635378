from fairforge.inference import empty_predictions, predict, variant_unavailable
from fairforge.manifest import read_manifest, write_manifest
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    inf, variant = snakemake.params.inference, snakemake.wildcards.variant
    reason = variant_unavailable(variant, snakemake.params.variant_options)
    if reason:
        # Reported as unavailable (with the expected weights path), never silently skipped.
        print(f"variant {variant} unavailable: {reason}")
        preds = empty_predictions()
    else:
        samples = read_manifest(snakemake.input.samples, contract="samples")
        preds = predict(snakemake.input.model, samples, "results", snakemake.wildcards.detector,
                        variant=variant, splits=inf["splits"], batch_size=inf["batch_size"],
                        num_workers=inf["num_workers"], device=snakemake.params.device,
                        threads=snakemake.threads,
                        variant_options=snakemake.params.variant_options)
    write_manifest(preds, snakemake.output[0], contract="predictions")
