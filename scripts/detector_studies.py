from pathlib import Path

import pandas as pd

from fairforge.tables import (
    balanced_table,
    balanced_twins,
    detector_settings_table,
    detectors_frame,
    generalization_table,
)
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    # External detectors (score files) have no checkpoint: their settings come from config.
    models = {Path(path).parent.name: path for path in snakemake.input.models}
    checkpoints = {name: models.get(name) for name in snakemake.params.detectors}
    settings = detector_settings_table(
        checkpoints,
        fallback=snakemake.params.settings,
        train_datasets=snakemake.params.train_datasets,
    )
    detectors_frame(settings).to_csv(snakemake.output.detectors, index=False)
    fairness = pd.read_csv(snakemake.input.fairness)
    balanced = balanced_table(fairness, balanced_twins(settings))
    balanced.to_csv(snakemake.output.balanced, index=False, float_format="%.6g")
    detection = pd.read_csv(snakemake.input.detection)
    generalization = generalization_table(detection, settings)
    generalization.to_csv(snakemake.output.generalization, index=False, float_format="%.6g")
    print(generalization.to_string(index=False))
