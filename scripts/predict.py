from fairforge.detector_kinds import predict
from fairforge.inference import empty_predictions, variant_unavailable
from fairforge.joblog import logged
from fairforge.manifest import read_ids, write_manifest
from fairforge.samples import share_of
from fairforge.sharding import prediction_shard_ids

with logged(snakemake.log[0]):
    i, p, wc = snakemake.input, snakemake.params, snakemake.wildcards
    reason = variant_unavailable(wc.variant, p.variant_options)
    if reason:  # reported as unavailable with the expected weights path, never skipped
        print(f"variant {wc.variant} unavailable: {reason}")
        preds = empty_predictions()
    else:
        ids = prediction_shard_ids(i.sources, wc.shard, p.inference["shard_size"])
        samples = read_ids(i.samples, ids, contract="samples")
        samples = share_of(samples, wc.method)  # a video variant's crops hold every share
        run = dict(device=p.device, threads=snakemake.threads, variant_options=p.variant_options)
        run["memory_mb"] = snakemake.resources.mem_mb
        run.update({k: p.inference[k] for k in ("splits", "batch_size", "num_workers")})
        run.update(p.scoring)
        preds = predict(i.model, samples, p.results, wc.detector, variant=wc.variant, **run)
    write_manifest(preds, snakemake.output[0], contract="predictions")
    print(f"{len(preds)} predictions")
