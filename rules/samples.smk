rule samples:
    """Every real crop and every successful fake with its label; failures counted per group."""
    input:
        sources=result_path("sources"),
        faces=result_path("faces"),
        forgeries=get_forgeries,
    output:
        samples=result_path("samples"),
        failures=result_path("failures"),
    log:
        log_path("samples/{dataset}.log"),
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/samples.py"
