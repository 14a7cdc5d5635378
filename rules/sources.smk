rule sources_listing:
    """Every source image with its subject, group and split (files not opened yet)."""
    output:
        "results/{dataset}/listing.parquet",
    params:
        dataset=dataset_config,
        root=lambda wc: str(dataset_root(wc.dataset, config["datasets"][wc.dataset])),
        split=config["split"],
        seed=config["seed"],
        shard_size=SHARD_SIZE,
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
    log:
        "results/logs/sources/{dataset}/listing.log",
    benchmark:
        "results/pipeline_info/benchmarks/sources/{dataset}/listing.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/sources_listing.py"


rule sources_shard:
    """One shard's source images (rendered first for the synthetic world): size, sha256,
    and whether the file decodes."""
    input:
        "results/{dataset}/listing.parquet",
    output:
        "results/{dataset}/sources/shard_{shard}.parquet",
    params:
        dataset=dataset_config,
        root=lambda wc: str(dataset_root(wc.dataset, config["datasets"][wc.dataset])),
        seed=config["seed"],
        shard_size=SHARD_SIZE,
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    log:
        "results/logs/sources/{dataset}/shard_{shard}.log",
    benchmark:
        "results/pipeline_info/benchmarks/sources/{dataset}/shard_{shard}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/sources_shard.py"


rule sources:
    """The sources manifest: one row per image, sorted by image_id, one row group per shard."""
    input:
        lambda wc: expand(
            "results/{{dataset}}/sources/shard_{shard}.parquet", shard=dataset_shards(wc)
        ),
    output:
        "results/{dataset}/sources.parquet",
    params:
        row_group_size=SHARD_SIZE,
    log:
        "results/logs/sources/{dataset}/gather.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/gather.py"
