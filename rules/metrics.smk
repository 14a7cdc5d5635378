rule fairness_table:
    """FairFD (naive, AA, UR) and textbook fairness per detector, on clean test predictions."""
    input:
        expand(
            "results/predictions/{detector}/{dataset}/clean.parquet",
            detector=DETECTORS,
            dataset=DATASETS,
        ),
    output:
        table=report(
            "results/fairness_table.csv",
            caption="../resources/report/fairness_table.rst",
            category="Fairness",
        ),
        per_group=report(
            "results/fairness_per_group.csv",
            caption="../resources/report/per_group.rst",
            category="Fairness",
        ),
        ci=report(
            "results/fairness_ci.csv",
            caption="../resources/report/fairness_ci.rst",
            category="Fairness",
        ),
    params:
        metrics=config["metrics"],
        seed=config["seed"],
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 30 * attempt,
    log:
        "results/logs/metrics/fairness_table.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/fairness_table.py"


rule failures_per_group:
    """Face-detection and forgery failures per group, all datasets."""
    input:
        expand("results/{dataset}/failures.csv", dataset=DATASETS),
    output:
        report(
            "results/failures_per_group.csv",
            caption="../resources/report/failures.rst",
            category="Failures",
        ),
    log:
        "results/logs/metrics/failures_per_group.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/concat_tables.py"


rule pipeline_info:
    """Versions, git commit, config hash and the resolved config of this run."""
    output:
        versions="results/pipeline_info/versions.yml",
        config="results/pipeline_info/config.resolved.yaml",
    params:
        config=config,
        repo=workflow.basedir,
    log:
        "results/logs/pipeline_info.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/pipeline_info.py"
