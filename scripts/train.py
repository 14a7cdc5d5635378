from fairforge.detector_kinds import train_detector
from fairforge.joblog import logged
from fairforge.manifest import concat_manifests
from fairforge.training.detector import TrainConfig, import_checkpoint

with logged(snakemake.log[0]):
    p = snakemake.params
    cfg = TrainConfig(**p.settings, threads=snakemake.threads)
    if p.checkpoint and cfg.init != "checkpoint":  # else: fine-tune from it
        import_checkpoint(p.checkpoint, snakemake.output.model, cfg, p.checkpoint_format)
        with open(snakemake.output.log_table, "w") as fh:
            fh.write(f"imported,{p.checkpoint}\n")
        print(f"imported {p.checkpoint_format} weights from {p.checkpoint}")
    else:
        samples = concat_manifests(snakemake.input.samples, contract="samples")
        log = train_detector(
            samples, p.results, cfg, snakemake.output.model, snakemake.output.log_table
        )
        print(log.to_string(index=False))
