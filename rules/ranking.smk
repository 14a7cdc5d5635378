rule train_encoder:
    """A face encoder trained on the train-split identities (near or far crops) through an
    angular-margin head, for the exposure study."""
    input:
        sources=f"results/{RANKING_DATASET}/sources.parquet",
        faces=f"results/{RANKING_DATASET}/faces.parquet",
    output:
        model="results/encoders/{encoder}/model.pt",
        log_table="results/encoders/{encoder}/training_log.csv",
    params:
        settings=lambda wc: encoder_training(config, wc.encoder),
        margin=config["faces"]["margin"],
        seed=config["seed"],
    threads: 1
    resources:
        gpu=0 if config["device"] == "cpu" else 1,
        mem_mb=lambda wc, attempt: 6000 * attempt,
        runtime=lambda wc, attempt: 120 * attempt,
    log:
        "results/logs/ranking/train_encoder/{encoder}.log",
    benchmark:
        "results/pipeline_info/benchmarks/ranking/train_encoder/{encoder}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/train_encoder.py"


rule exposure:
    """Visibility and exposure of groups in face rankings at a distance (Exposure paper)."""
    input:
        sources=f"results/{RANKING_DATASET}/sources.parquet",
        faces=f"results/{RANKING_DATASET}/faces.parquet",
        encoders=[encoder_checkpoint(label) for label in trained_encoders(config)],
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
        encoders=ranking_encoders(config),
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
