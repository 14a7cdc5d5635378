from fairforge.detector_kinds import predict
from fairforge.inference import empty_predictions, variant_unavailable
from fairforge.manifest import read_ids, write_manifest
from fairforge.sharding import shard_image_ids
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    p, wc = snakemake.params, snakemake.wildcards
    inf = p.inference
    reason = variant_unavailable(wc.variant, p.variant_options)
    if reason:
        # Reported as unavailable (with the expected weights path), never silently skipped.
        print(f"variant {wc.variant} unavailable: {reason}")
        preds = empty_predictions()
    else:
        ids = shard_image_ids(snakemake.input.sources, wc.shard, inf["shard_size"])
        samples = read_ids(snakemake.input.samples, ids, contract="samples")
        preds = predict(
            snakemake.input.model,
            samples,
            p.results,
            wc.detector,
            variant=wc.variant,
            splits=inf["splits"],
            batch_size=inf["batch_size"],
            num_workers=inf["num_workers"],
            device=p.device,
            threads=snakemake.threads,
            variant_options=p.variant_options,
        )
    write_manifest(preds, snakemake.output[0], contract="predictions")
    print(f"{len(preds)} predictions")
