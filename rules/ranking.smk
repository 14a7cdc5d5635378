rule exposure:
    """Visibility and exposure of groups in face rankings at a distance (Exposure paper)."""
    input:
        sources=f"results/{RANKING_DATASET}/sources.parquet",
        faces=f"results/{RANKING_DATASET}/faces.parquet",
    output:
        table=report(
            "results/exposure_table.csv",
            caption="../resources/report/exposure.rst",
            category="Exposure",
        ),
        per_probe_group=report(
            "results/exposure_per_probe_group.csv",
            caption="../resources/report/exposure_per_probe_group.rst",
            category="Exposure",
        ),
        ks=report(
            "results/exposure_ks.csv",
            caption="../resources/report/exposure_ks.rst",
            category="Exposure",
        ),
        per_ranking="results/exposure_per_ranking.parquet",
        hit_curve="results/exposure_hit_curve.csv",
        figure=report(
            "results/figures/exposure.png",
            caption="../resources/report/exposure_figure.rst",
            category="Exposure",
        ),
    params:
        ranking=config["ranking"],
        group_by=config["ranking"].get("group_by")
        or config["datasets"][RANKING_DATASET].get("group_by"),
        margin=config["faces"]["margin"],
        seed=config["seed"],
    threads: 1  # dlib encodes on one core; leave the other to the forgery jobs
    resources:
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: (30 + 2 * len(SHARDS[RANKING_DATASET])) * attempt,
    log:
        "results/logs/ranking/exposure.log",
    benchmark:
        "results/pipeline_info/benchmarks/ranking/exposure.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/exposure.py"
