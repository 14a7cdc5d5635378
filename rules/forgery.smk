rule forgery_shard:
    """One forgery method on one shard of source faces (targets may come from any shard)."""
    input:
        sources="results/{dataset}/sources.parquet",
        faces="results/{dataset}/faces.parquet",
        pairs="results/{dataset}/pairs.parquet",
    output:
        manifest="results/{dataset}/forgeries/{method}/shard_{shard}.parquet",
        images=directory("results/{dataset}/forgeries/{method}/shard_{shard}"),
    params:
        backend=lambda wc: config["forgery"]["backends"].get(wc.method, "classical"),
        options=lambda wc: config["forgery"]["options"].get(wc.method, {}),
        seed=config["seed"],
        shard_size=SHARD_SIZE,
    resources:
        mem_mb=lambda wc, attempt: 3000 * attempt,
        runtime=lambda wc, attempt: 120 * attempt,
    log:
        "results/logs/forgery/{dataset}/{method}/shard_{shard}.log",
    benchmark:
        "results/pipeline_info/benchmarks/forgery/{dataset}/{method}/shard_{shard}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/forgery_shard.py"


rule forgery:
    input:
        lambda wc: expand(
            "results/{{dataset}}/forgeries/{{method}}/shard_{shard}.parquet",
            shard=dataset_shards(wc),
        ),
    output:
        "results/{dataset}/forgeries/{method}.parquet",
    log:
        "results/logs/forgery/{dataset}/{method}/gather.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/gather.py"


rule samples:
    """Every real crop and every successful fake with its label; failures counted per group."""
    input:
        sources="results/{dataset}/sources.parquet",
        faces="results/{dataset}/faces.parquet",
        forgeries=expand("results/{{dataset}}/forgeries/{method}.parquet", method=METHODS),
    output:
        samples="results/{dataset}/samples.parquet",
        failures="results/{dataset}/failures.csv",
    log:
        "results/logs/samples/{dataset}.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/samples.py"


rule forgery_examples:
    """FairFD Figure 2: per group a source, its target, every method's fake and mask."""
    input:
        sources="results/{dataset}/sources.parquet",
        faces="results/{dataset}/faces.parquet",
        forgeries=expand("results/{{dataset}}/forgeries/{method}.parquet", method=METHODS),
    output:
        "results/figures/{dataset}/forgery_examples.png",
    log:
        "results/logs/forgery/{dataset}/examples.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/forgery_examples.py"
