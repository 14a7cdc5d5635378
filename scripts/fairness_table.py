from fairforge.joblog import logged
from fairforge.manifest import concat_manifests
from fairforge.tables import fairness_options, fairness_outputs, read_failures, training_records

with logged(snakemake.log[0]):
    i, m = snakemake.input, snakemake.params.metrics
    preds = concat_manifests(i.predictions, contract="predictions")
    preds = preds.loc[preds["split"] == m["evaluation_split"]]
    out = fairness_outputs(
        preds,
        seed=snakemake.params.seed,
        training=training_records(i.training_logs),
        failures=read_failures(i.failures),
        **fairness_options(m),
    )
    for name, frame in out.items():
        frame.to_csv(snakemake.output[name], index=False, float_format="%.6g")
    print(out["table"].to_string(index=False))
