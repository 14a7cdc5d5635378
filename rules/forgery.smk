rule forgery_shard:
    """One forgery method on one shard of source faces (targets may come from any shard)."""
    input:
        sources=result_path("sources"),
        faces=result_path("faces"),
        pairs=result_path("pairs"),
    output:
        manifest=result_path("forgery_shard"),
        images=directory(result_path("forgery_images_shard")),
    log:
        log_path("forgery/{dataset}/{method}/shard_{shard}.log"),
    benchmark:
        benchmark_path("forgery/{dataset}/{method}/shard_{shard}.tsv")
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(3000),
        runtime=per_attempt(120),
    params:
        backend=get_forgery_backend,
        options=get_forgery_options,
        seed=config["seed"],
        shard_size=SHARD_SIZE,
        results=get_results_root,
    script:
        "../scripts/forgery_shard.py"


rule forgery:
    """One method's fakes on one dataset, gathered in sample order."""
    input:
        get_forgery_shards,
    output:
        result_path("forgery"),
    log:
        log_path("forgery/{dataset}/{method}/gather.log"),
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/gather_shards.py"


rule imported_masks_shard:
    """The manipulation masks of the fakes one shard of a dataset ships, on their crops: the
    mask the dataset released, else the difference to the frame each was made from."""
    input:
        sources=result_path("sources"),
        faces=result_path("faces_shard"),
        transforms=result_path("face_transforms_shard"),
    output:
        manifest=result_path("imported_masks_shard"),
        images=directory(result_path("imported_masks_images_shard")),
    log:
        log_path("imported_masks/{dataset}/shard_{shard}.log"),
    benchmark:
        benchmark_path("imported_masks/{dataset}/shard_{shard}.tsv")
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(3000),
        runtime=per_attempt(60),
    params:
        dataset=get_dataset_config,
        root=get_dataset_root,
        border=config["faces"]["border"],
        images=config["images"],
        shard_size=SHARD_SIZE,
        results=get_results_root,
    script:
        "../scripts/imported_masks_shard.py"


rule imported_masks:
    """The masks of the fakes a dataset ships, gathered in sample order."""
    input:
        get_imported_mask_shards,
    output:
        result_path("imported_masks"),
    log:
        log_path("imported_masks/{dataset}/gather.log"),
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/gather_shards.py"
