import pandas as pd

from fairforge.detector_kinds import detector_costs
from fairforge.joblog import logged

with logged(snakemake.log[0]):
    # timed with a prediction job's torch threads, the same for each detector; the job itself
    # holds every core so that nothing else runs beside the timing
    models = dict(zip(snakemake.params.detectors, snakemake.input.models, strict=True))
    timing = snakemake.params.timing
    rows = detector_costs(
        models,
        device=snakemake.params.device,
        batch_sizes=tuple(timing["batch_sizes"]),
        rounds=timing["rounds"],
        repeats=timing["repeats"],
        threads=snakemake.params.threads,
    )
    pd.DataFrame(rows).to_csv(snakemake.output[0], index=False, float_format="%.6g")
    for row in rows:
        print(row)
