rule pairs:
    """Source-to-target pairs within each group, fixed for all identity-replacing methods."""
    input:
        sources=result_path("sources"),
        faces=result_path("faces"),
    output:
        result_path("pairs"),
    log:
        log_path("pairs/{dataset}.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(30),
    params:
        seed=config["seed"],
    script:
        "../scripts/pairs.py"
