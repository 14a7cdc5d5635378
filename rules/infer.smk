rule predict:
    """Scores of one detector on one dataset under one test-time variant."""
    input:
        model="results/models/{detector}/model.pt",
        samples="results/{dataset}/samples.parquet",
    output:
        "results/predictions/{detector}/{dataset}/{variant}.parquet",
    params:
        inference=config["inference"],
        device=config["device"],
    threads: 2
    resources:
        gpu=0,
    log:
        "results/logs/predict/{detector}/{dataset}/{variant}.log",
    benchmark:
        "results/pipeline_info/benchmarks/predict/{detector}/{dataset}/{variant}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/predict.py"
