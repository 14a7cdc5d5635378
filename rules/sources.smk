rule sources_listing:
    """Every source image with its subject, group and split (files not opened yet), and the
    split's report: rows, videos and identities per split, and those two splits share."""
    output:
        result_path("listing"),
        report=result_path("split_report"),
    log:
        log_path("sources/{dataset}/listing.log"),
    benchmark:
        benchmark_path("sources/{dataset}/listing.tsv")
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
    params:
        dataset=get_dataset_config,
        root=get_dataset_root,
        split=get_dataset_split,
        seed=config["seed"],
        shard_size=SHARD_SIZE,
    script:
        "../scripts/sources_listing.py"


rule sources_shard:
    """One shard's source images (rendered first for the synthetic world): size, sha256,
    and whether the file decodes."""
    input:
        result_path("listing"),
    output:
        result_path("sources_shard"),
    log:
        log_path("sources/{dataset}/shard_{shard}.log"),
    benchmark:
        benchmark_path("sources/{dataset}/shard_{shard}.tsv")
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(60),
    params:
        dataset=get_dataset_config,
        root=get_dataset_root,
        seed=config["seed"],
        shard_size=SHARD_SIZE,
        images=config["images"],
    script:
        "../scripts/sources_shard.py"


rule sources:
    """The sources manifest: one row per image, sorted by image_id, one row group per shard."""
    input:
        get_source_shards,
    output:
        result_path("sources"),
    log:
        log_path("sources/{dataset}/gather.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        row_group_size=SHARD_SIZE,
    script:
        "../scripts/gather_shards.py"
