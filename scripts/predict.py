from fairforge.detectors.external import external_predictions
from fairforge.inference import empty_predictions, predict, variant_unavailable
from fairforge.manifest import read_manifest, write_manifest
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    p = snakemake.params
    inf, variant, detector = p.inference, snakemake.wildcards.variant, snakemake.wildcards.detector
    reason = variant_unavailable(variant, p.variant_options)
    if reason:
        # Reported as unavailable (with the expected weights path), never silently skipped.
        print(f"variant {variant} unavailable: {reason}")
        preds = empty_predictions()
    elif p.external:
        samples = read_manifest(snakemake.input.samples, contract="samples")
        preds = external_predictions(snakemake.input.model, samples, detector, variant=variant,
                                     splits=inf["splits"])
    else:
        samples = read_manifest(snakemake.input.samples, contract="samples")
        preds = predict(snakemake.input.model, samples, "results", detector, variant=variant,
                        splits=inf["splits"], batch_size=inf["batch_size"],
                        num_workers=inf["num_workers"], device=p.device,
                        threads=snakemake.threads, variant_options=p.variant_options)
    write_manifest(preds, snakemake.output[0], contract="predictions")
