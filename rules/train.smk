rule train:
    """Train one detector under the shared protocol; keep the best-by-validation-AUC weights."""
    input:
        samples=lambda wc: f"results/{train_dataset(config, wc.detector)}/samples.parquet",
    output:
        model="results/models/{detector}/model.pt",
        log_table="results/models/{detector}/training_log.csv",
    params:
        settings=lambda wc: detector_settings(config, wc.detector),
    threads: 2
    resources:
        gpu=0,
    log:
        "results/logs/train/{detector}.log",
    benchmark:
        "results/pipeline_info/benchmarks/train/{detector}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/train.py"
