# The learned high-to-low degradation generator (Exposure paper). Trained only when
# degradation.high_dir and low_dir are set and no ready checkpoint is given; far_learned@1
# then reads it (see fairforge.workflow.variant_options / degradation_inputs).
from fairforge.workflow import (
    DEGRADATION_CHECKPOINT,
    DEGRADATION_SAMPLE_SHEET,
    degradation_images,
    degradation_settings,
    trains_degradation,
)


if trains_degradation(config):

    rule train_degradation:
        """Train the 64x64 -> 16x16 generator against unpaired real low-resolution faces."""
        input:
            high=lambda wc: degradation_images(config, "high_dir"),
            low=lambda wc: degradation_images(config, "low_dir"),
        output:
            generator=DEGRADATION_CHECKPOINT,
            samples=DEGRADATION_SAMPLE_SHEET,
        params:
            settings=degradation_settings(config),
        threads: 2
        resources:
            gpu=0 if config["device"] == "cpu" else 1,
            mem_mb=lambda wc, attempt: 4000 * attempt,
            runtime=lambda wc, attempt: 120 * attempt,
        log:
            "results/logs/degradation/train.log",
        benchmark:
            "results/pipeline_info/benchmarks/degradation/train.tsv"
        conda:
            "../envs/fairforge.yaml"
        script:
            "../scripts/train_degradation.py"
