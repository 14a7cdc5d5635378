rule train_encoder:
    """A face encoder trained on the train-split identities (near or far crops) through an
    angular-margin head, for the exposure study."""
    input:
        sources=f"results/{RANKING_DATASET}/sources.parquet",
        faces=f"results/{RANKING_DATASET}/faces.parquet",
    output:
        model="results/encoders/{encoder}/model.pt",
        log_table="results/encoders/{encoder}/training_log.csv",
    wildcard_constraints:
        encoder="|".join(trained_encoders(config)) or "(?!)",
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


rule ranking_study:
    """The identities ranked and their images: l per identity, 30% probes, 70% gallery."""
    input:
        sources=f"results/{RANKING_DATASET}/sources.parquet",
        faces=f"results/{RANKING_DATASET}/faces.parquet",
    output:
        study="results/ranking/study.parquet",
        calibration="results/ranking/calibration.parquet",
    params:
        ranking=config["ranking"],
        group_by=config["ranking"].get("group_by")
        or config["datasets"][RANKING_DATASET].get("group_by"),
        seed=config["seed"],
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
    log:
        "results/logs/ranking/study.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/ranking_study.py"


rule embed_shard:
    """One encoder's embeddings of the study images of one shard, in the views the
    settings compare (far probes; far and/or close-range gallery)."""
    input:
        sources=f"results/{RANKING_DATASET}/sources.parquet",
        study="results/ranking/study.parquet",
        calibration="results/ranking/calibration.parquet",
        checkpoint=lambda wc: [encoder_checkpoint(wc.encoder)]
        if wc.encoder in trained_encoders(config)
        else [],
    output:
        "results/ranking/embeddings/{encoder}/shard_{shard}.parquet",
    params:
        encoder=lambda wc: ranking_encoders(config)[wc.encoder],
        ranking=config["ranking"],
        margin=config["faces"]["margin"],
        seed=config["seed"],
        shard_size=SHARD_SIZE,
    threads: 1  # dlib encodes on one core
    resources:
        mem_mb=lambda wc, attempt: 3000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    log:
        "results/logs/ranking/embed/{encoder}/shard_{shard}.log",
    benchmark:
        "results/pipeline_info/benchmarks/ranking/embed/{encoder}/shard_{shard}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/embed_shard.py"


rule exposure:
    """Visibility and exposure of groups in face rankings at a distance (Exposure paper)."""
    input:
        study="results/ranking/study.parquet",
        embeddings=expand(
            "results/ranking/embeddings/{encoder}/shard_{shard}.parquet",
            encoder=RANKING_ENCODERS,
            shard=SHARDS[RANKING_DATASET],
        ),
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
        encoders=RANKING_ENCODERS,
    resources:
        mem_mb=lambda wc, attempt: 4000 * attempt,
    log:
        "results/logs/ranking/exposure.log",
    benchmark:
        "results/pipeline_info/benchmarks/ranking/exposure.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/exposure.py"
