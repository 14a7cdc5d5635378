rule predict:
    """Scores of one detector under one test-time variant on one shard of a dataset: the
    real crops and fakes of inference.shard_size source images."""
    input:
        model=lambda wc: model_input(config, wc.detector),
        sources="results/{dataset}/sources.parquet",
        samples=lambda wc: predict_samples_path(wc.dataset, wc.variant),
        degradation=lambda wc: degradation_inputs(config, wc.variant),
    output:
        "results/predictions/{detector}/{dataset}/{variant}/shard_{shard}.parquet",
    wildcard_constraints:
        detector="|".join(RUN_DETECTORS) or "(?!)",
    params:
        inference=config["inference"],
        device=config["device"],
        variant_options=lambda wc: variant_options(config, wc.variant),
    # One core per job on a CPU: small models gain little from a second torch thread, and
    # jobs run side by side instead (profiles/slurm gives GPU jobs more).
    threads: 1
    resources:
        gpu=0 if config["device"] == "cpu" else 1,
        mem_mb=lambda wc, attempt: 3000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    log:
        "results/logs/predict/{detector}/{dataset}/{variant}/shard_{shard}.log",
    benchmark:
        "results/pipeline_info/benchmarks/predict/{detector}/{dataset}/{variant}/shard_{shard}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/predict.py"


rule predictions:
    """One detector's scores on one dataset under one variant, gathered in sample order."""
    input:
        lambda wc: expand(
            "results/predictions/{{detector}}/{{dataset}}/{{variant}}/shard_{shard}.parquet",
            shard=PREDICT_SHARDS[wc.dataset],
        ),
    output:
        "results/predictions/{detector}/{dataset}/{variant}.parquet",
    wildcard_constraints:
        detector="|".join(RUN_DETECTORS) or "(?!)",
    log:
        "results/logs/predict/{detector}/{dataset}/{variant}/gather.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/gather.py"


rule external_scores:
    """A detector run elsewhere: its score file, checked against the samples it scores."""
    input:
        scores=lambda wc: model_input(config, wc.detector),
        samples=lambda wc: predict_samples_path(wc.dataset, wc.variant),
    output:
        "results/predictions/{detector}/{dataset}/{variant}.parquet",
    wildcard_constraints:
        detector="|".join(d for d in DETECTORS if is_external(config, d)) or "(?!)",
    params:
        splits=config["inference"]["splits"],
        variant_options=lambda wc: variant_options(config, wc.variant),
    log:
        "results/logs/predict/{detector}/{dataset}/{variant}.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/external_scores.py"


rule efficiency:
    """Parameters, FLOPs per image, latency at batch 1 and 32, peak memory of one detector."""
    input:
        model="results/models/{detector}/model.pt",
    output:
        "results/models/{detector}/efficiency.csv",
    params:
        device=config["device"],
    # Latency is measured alone: two timing jobs must not share the cores.
    threads: lambda wc: workflow.cores
    resources:
        gpu=0 if config["device"] == "cpu" else 1,
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: 30 * attempt,
    log:
        "results/logs/efficiency/{detector}.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/efficiency.py"


rule efficiency_table:
    input:
        expand("results/models/{detector}/efficiency.csv", detector=RUN_DETECTORS),
    output:
        "results/efficiency.csv",
    log:
        "results/logs/efficiency/table.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/concat_tables.py"
