rule faces_shard:
    """Detect, landmark and align the faces of one shard of source images."""
    input:
        "results/{dataset}/sources.parquet",
    output:
        manifest="results/{dataset}/faces/shard_{shard}.parquet",
        crops=directory("results/{dataset}/crops/shard_{shard}"),
    params:
        faces=config["faces"],
        root=lambda wc: str(dataset_root(wc.dataset, config["datasets"][wc.dataset])),
        shard_size=SHARD_SIZE,
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    log:
        "results/logs/faces/{dataset}/shard_{shard}.log",
    benchmark:
        "results/pipeline_info/benchmarks/faces/{dataset}/shard_{shard}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/faces_shard.py"


rule faces:
    """Gather the shards; write the per-group face-detection rate."""
    input:
        sources="results/{dataset}/sources.parquet",
        shards=lambda wc: expand(
            "results/{{dataset}}/faces/shard_{shard}.parquet", shard=dataset_shards(wc)
        ),
    output:
        manifest="results/{dataset}/faces.parquet",
        rate="results/{dataset}/face_detection_rate.csv",
    log:
        "results/logs/faces/{dataset}/gather.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/faces_gather.py"


rule pairs:
    """Source-to-target pairs within each group, fixed for all identity-replacing methods."""
    input:
        sources="results/{dataset}/sources.parquet",
        faces="results/{dataset}/faces.parquet",
    output:
        "results/{dataset}/pairs.parquet",
    params:
        seed=config["seed"],
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 30 * attempt,
    log:
        "results/logs/pairs/{dataset}.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/pairs.py"
