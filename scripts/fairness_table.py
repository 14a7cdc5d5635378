import pandas as pd

from fairforge.manifest import concat_manifests
from fairforge.metrics.fairness import fairness_table, per_group_long
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    m = snakemake.params.metrics
    preds = concat_manifests(snakemake.input, contract="predictions")
    preds = preds.loc[preds["split"] == m["evaluation_split"]]
    tables, per_group = [], []
    for dataset, part in preds.groupby("dataset", sort=True):
        table = fairness_table(part, threshold=m["threshold"], ur_denominator=m["ur_denominator"])
        tables.append(table.reset_index(names="metric").assign(dataset=dataset))
        per_group.append(per_group_long(part, threshold=m["threshold"]).assign(dataset=dataset))
    table = pd.concat(tables, ignore_index=True)
    table = table[["dataset", "metric"] + [c for c in table.columns if c not in ("dataset", "metric")]]
    table.to_csv(snakemake.output.table, index=False, float_format="%.6g")
    pd.concat(per_group, ignore_index=True).to_csv(snakemake.output.per_group, index=False,
                                                   float_format="%.6g")
    print(table.to_string(index=False))
