from fairforge.detector_kinds import predict
from fairforge.inference import empty_predictions, variant_unavailable
from fairforge.joblog import logged
from fairforge.manifest import read_manifest, write_manifest

with logged(snakemake.log[0]):
    p, wc = snakemake.params, snakemake.wildcards
    reason = variant_unavailable(wc.variant, p.variant_options)
    if reason:
        print(f"variant {wc.variant} unavailable: {reason}")
        preds = empty_predictions()
    else:
        samples = read_manifest(snakemake.input.samples, contract="samples")
        preds = predict(
            snakemake.input.scores,
            samples,
            p.results,
            wc.detector,
            variant=wc.variant,
            splits=p.splits,
            arch="external",
        )
    write_manifest(preds, snakemake.output[0], contract="predictions")
    print(f"{len(preds)} predictions")
