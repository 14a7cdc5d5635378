rule train:
    """Train one detector under the shared protocol; keep the best-by-validation-AUC weights."""
    input:
        samples=lambda wc: train_input(config, wc.detector),
    output:
        model="results/models/{detector}/model.pt",
        log_table="results/models/{detector}/training_log.csv",
    params:
        settings=lambda wc: detector_settings(config, wc.detector),
        checkpoint=lambda wc: config["detectors"][wc.detector].get("checkpoint"),
        checkpoint_format=lambda wc: config["detectors"][wc.detector]["checkpoint_format"],
    # One core per job on a CPU: small models gain little from a second torch thread, and
    # jobs run side by side instead (profiles/slurm gives GPU jobs more).
    threads: 1
    resources:
        gpu=0 if config["device"] == "cpu" else 1,
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: 120 * attempt,
    log:
        "results/logs/train/{detector}.log",
    benchmark:
        "results/pipeline_info/benchmarks/train/{detector}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/train.py"
