rule predict:
    """Scores of one detector on one dataset under one test-time variant."""
    input:
        model="results/models/{detector}/model.pt",
        samples=lambda wc: predict_samples_path(wc.dataset, wc.variant),
    output:
        "results/predictions/{detector}/{dataset}/{variant}.parquet",
    params:
        inference=config["inference"],
        device=config["device"],
        variant_options=lambda wc: variant_options(config, wc.variant),
    threads: 2
    resources:
        gpu=0 if config["device"] == "cpu" else 1,
        mem_mb=lambda wc, attempt: 3000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    log:
        "results/logs/predict/{detector}/{dataset}/{variant}.log",
    benchmark:
        "results/pipeline_info/benchmarks/predict/{detector}/{dataset}/{variant}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/predict.py"
