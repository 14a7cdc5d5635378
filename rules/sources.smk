rule sources:
    """List (or, for synthetic, render) the source images: one row per image, split by subject."""
    output:
        "results/{dataset}/sources.parquet",
    params:
        dataset=dataset_config,
        root=lambda wc: str(dataset_root(wc.dataset, config["datasets"][wc.dataset])),
        split=config["split"],
        seed=config["seed"],
        shard_size=SHARD_SIZE,
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: (30 + len(SHARDS[wc.dataset]) // 4) * attempt,
    log:
        "results/logs/sources/{dataset}.log",
    benchmark:
        "results/pipeline_info/benchmarks/sources/{dataset}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/sources.py"
