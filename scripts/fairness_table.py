from fairforge.joblog import logged
from fairforge.manifest import concat_manifests
from fairforge.tables import fairness_outputs

with logged(snakemake.log[0]):
    m = snakemake.params.metrics
    preds = concat_manifests(snakemake.input, contract="predictions")
    preds = preds.loc[preds["split"] == m["evaluation_split"]]
    out = fairness_outputs(
        preds,
        threshold=m["threshold"],
        ur_denominator=m["ur_denominator"],
        threshold_rule=m["threshold_rule"],
        eer=m["eer"],
        bootstrap=m["bootstrap"],
        seed=snakemake.params.seed,
    )
    for name, frame in out.items():
        frame.to_csv(snakemake.output[name], index=False, float_format="%.6g")
    print(out["table"].to_string(index=False))
