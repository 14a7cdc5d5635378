import pandas as pd

from fairforge.joblog import logged
from fairforge.tables import detector_studies

with logged(snakemake.log[0]):
    i, o, p = snakemake.input, snakemake.output, snakemake.params
    detectors, balanced, generalization = detector_studies(
        i.models,
        p.detectors,
        p.settings,
        p.train_datasets,
        pd.read_csv(i.fairness),
        pd.read_csv(i.detection),
        p.min_val_auc,
        pd.read_csv(i.protocol),
    )
    detectors.to_csv(o.detectors, index=False)
    balanced.to_csv(o.balanced, index=False, float_format="%.6g")
    generalization.to_csv(o.generalization, index=False, float_format="%.6g")
    print(generalization.to_string(index=False))
