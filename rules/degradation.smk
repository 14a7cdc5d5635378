# The learned high-to-low degradation generator (Exposure paper). Trained only when
# degradation.high_dir and low_dir are set and no ready checkpoint is given; far_learned@1
# then reads it (see fairforge.workflow.variant_options / degradation_inputs).
from fairforge.workflow import degradation_settings, trains_degradation

if trains_degradation(config):

    rule train_degradation:
        """Train the 64x64 -> 16x16 generator against unpaired real low-resolution faces."""
        input:
            high=get_degradation_high_images,
            low=get_degradation_low_images,
        output:
            generator=result_path("degradation_generator"),
            samples=result_path("degradation_samples"),
        log:
            log_path("degradation/train.log"),
        benchmark:
            benchmark_path("degradation/train.tsv")
        conda:
            "../envs/fairforge.yaml"
        threads: 2
        resources:
            gpu=GPU,
            mem_mb=per_attempt(4000),
            runtime=per_attempt(120),
        params:
            settings=degradation_settings(config),
        script:
            "../scripts/train_degradation.py"
