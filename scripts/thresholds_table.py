import pandas as pd

from fairforge.tables import table_from_files, thresholds_table
from fairforge.tables.fairness import thresholds_options
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    m = snakemake.params.metrics
    if "val" in snakemake.params.splits:
        table = table_from_files(
            snakemake.input,
            thresholds_table,
            **thresholds_options(m),
            fit_split="val",
            eval_split=m["evaluation_split"],
        )
    else:
        table = pd.DataFrame(
            {
                "note": [
                    "no validation predictions (config inference.splits "
                    "lacks 'val'): per-group thresholds cannot be fitted"
                ]
            }
        )
    table.to_csv(snakemake.output[0], index=False, float_format="%.6g")
    print(table.to_string(index=False))
