from fairforge.manifest import read_manifest
from fairforge.training import TrainConfig, train_detector
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    cfg = TrainConfig(**snakemake.params.settings, threads=snakemake.threads)
    samples = read_manifest(snakemake.input.samples, contract="samples")
    log = train_detector(samples, "results", cfg, snakemake.output.model,
                         snakemake.output.log_table)
    print(log.to_string(index=False))
