from fairforge.joblog import logged
from fairforge.manifest import read_manifest
from fairforge.tables import random_intensity_draws
from fairforge.tables.robustness import DRAW_COLUMNS

with logged(snakemake.log[0]):
    p = snakemake.params
    samples = read_manifest(snakemake.input[0], columns=["sample_id", "split"])
    ids = samples.loc[samples["split"].isin(list(p.splits)), "sample_id"]
    draws = random_intensity_draws(sorted(ids.astype(str)), p.variants, p.options)
    draws[DRAW_COLUMNS].to_csv(snakemake.output[0], index=False)
    print(f"{len(p.variants)} random-intensity variants x {ids.size} samples")
