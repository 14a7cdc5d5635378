# The forgery quality card: per-fake measures per dataset and method, how far apart the
# methods' fakes of the same faces are per dataset, then the card per dataset × method ×
# backend × group with subject-level intervals, and one figure per method. A backend the card
# compares (forgery.quality.compare_backends) forges the same pairs in its own job, for the
# card only.


rule forgery_quality_fakes:
    """Identity, pose, expression, change energy, boundary and re-detection of each fake."""
    input:
        faces=result_path("faces"),
        forgery=result_path("forgery"),
    output:
        result_path("forgery_quality_fakes"),
    log:
        log_path("forgery/{dataset}/{method}/quality.log"),
    benchmark:
        benchmark_path("forgery/{dataset}/{method}/quality.tsv")
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(60),
    params:
        seed=config["seed"],
        results=get_results_root,
        identity_per_group=config["forgery"]["quality"]["identity_per_group"],
    script:
        "../scripts/forgery_quality_fakes.py"


rule forgery_quality_compared:
    """The method's faces forged again with another backend, measured like its fakes."""
    input:
        sources=result_path("sources"),
        faces=result_path("faces"),
        pairs=result_path("pairs"),
        forgery=result_path("forgery"),
    output:
        fakes=result_path("forgery_quality_compared"),
        images=directory(result_path("forgery_quality_compared_images")),
    log:
        log_path("forgery/{dataset}/{method}/quality_{backend}.log"),
    benchmark:
        benchmark_path("forgery/{dataset}/{method}/quality_{backend}.tsv")
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(3000),
        runtime=per_attempt(120),
    params:
        options=get_compared_options,
        seed=config["seed"],
        results=get_results_root,
        identity_per_group=config["forgery"]["quality"]["identity_per_group"],
    script:
        "../scripts/forgery_quality_compared.py"


rule forgery_separation:
    """Per two methods keeping the same image: their fakes' difference vs their change."""
    input:
        faces=result_path("faces"),
        forgeries=get_forgeries,
    output:
        result_path("forgery_separation"),
    log:
        log_path("forgery/{dataset}/separation.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(60),
    params:
        results=get_results_root,
    script:
        "../scripts/forgery_separation.py"


rule forgery_quality:
    """The quality card of every dataset, method and group, and a figure per method."""
    input:
        fakes=get_forgery_quality_fakes,
        separation=get_forgery_separations,
        compared=get_forgery_quality_compared,
    output:
        table=result_path("forgery_quality"),
        figures=expand(result_path("forgery_quality_figure"), method=METHODS),
    log:
        log_path("forgery/quality.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        seed=config["seed"],
        bootstrap=config["metrics"]["bootstrap"],
        methods=METHODS,
    script:
        "../scripts/forgery_quality.py"
