rule fairness_table:
    """FairFD (naive, AA, UR) and textbook fairness per detector, on clean test predictions."""
    input:
        expand(
            "results/predictions/{detector}/{dataset}/clean.parquet",
            detector=DETECTORS,
            dataset=DATASETS,
        ),
    output:
        table="results/fairness_table.csv",
        per_group="results/fairness_per_group.csv",
        ci="results/fairness_ci.csv",
    params:
        metrics=config["metrics"],
        seed=config["seed"],
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
        "results/failures_per_group.csv",
    log:
        "results/logs/metrics/failures_per_group.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/concat_tables.py"
