rule train:
    """Train one detector under the shared protocol; keep the best-by-validation-AUC weights."""
    input:
        unpack(get_train_input),
    output:
        model=result_path("model"),
        log_table=result_path("training_log"),
    log:
        log_path("train/{detector}.log"),
    benchmark:
        benchmark_path("train/{detector}.tsv")
    conda:
        "../envs/fairforge.yaml"
    # One core per job on a CPU: small models gain little from a second torch thread, and
    # jobs run side by side instead (profiles/slurm gives GPU jobs more).
    threads: 1
    resources:
        gpu=GPU,
        mem_mb=per_attempt(4000),
        runtime=per_attempt(120),
    params:
        settings=get_detector_settings,
        checkpoint=get_checkpoint,
        checkpoint_format=get_checkpoint_format,
        results=get_results_root,
    script:
        "../scripts/train.py"
