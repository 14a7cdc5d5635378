# The exposure study (Exposure paper): identities ranked by face encoders at a distance.


rule train_encoder:
    """A face encoder trained on the train-split identities (near or far crops) through an
    angular-margin head, for the exposure study; far crops are degraded as the ranking
    degrades probes (through the trained near-to-far generator when it is learned)."""
    input:
        sources=result_path("sources", dataset=RANKING_DATASET),
        faces=result_path("faces", dataset=RANKING_DATASET),
        generator=get_encoder_training_inputs,
    output:
        model=result_path("encoder_model"),
        log_table=result_path("encoder_training_log"),
    log:
        log_path("ranking/train_encoder/{encoder}.log"),
    benchmark:
        benchmark_path("ranking/train_encoder/{encoder}.tsv")
    wildcard_constraints:
        encoder=one_of(trained_encoders(config)),
    conda:
        "../envs/fairforge.yaml"
    threads: 1
    resources:
        gpu=GPU,
        mem_mb=per_attempt(6000),
        runtime=per_attempt(120),
    params:
        settings=get_encoder_training,
        margin=config["faces"]["margin"],
        seed=config["seed"],
        results=get_results_root,
    script:
        "../scripts/train_encoder.py"


rule ranking_study:
    """The identities ranked and their images: l per identity, 30% probes, 70% gallery."""
    input:
        sources=result_path("sources", dataset=RANKING_DATASET),
        faces=result_path("faces", dataset=RANKING_DATASET),
    output:
        study=result_path("ranking_study"),
        calibration=result_path("ranking_calibration"),
    log:
        log_path("ranking/study.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
    params:
        ranking=config["ranking"],
        group_by=config["ranking"].get("group_by")
        or config["datasets"][RANKING_DATASET].get("group_by"),
        seed=config["seed"],
    script:
        "../scripts/ranking_study.py"


rule embed_shard:
    """One encoder's embeddings of the study images of one shard, in the views the
    settings compare (far probes; far and/or close-range gallery)."""
    input:
        sources=result_path("sources", dataset=RANKING_DATASET),
        study=result_path("ranking_study"),
        calibration=result_path("ranking_calibration"),
        checkpoint=get_encoder_checkpoint,
        generator=get_ranking_degradation_inputs,
    output:
        result_path("embedding_shard"),
    log:
        log_path("ranking/embed/{encoder}/shard_{shard}.log"),
    benchmark:
        benchmark_path("ranking/embed/{encoder}/shard_{shard}.tsv")
    conda:
        "../envs/fairforge.yaml"
    threads: 1  # dlib encodes on one core
    resources:
        mem_mb=per_attempt(3000),
        runtime=per_attempt(60),
    params:
        encoder=get_encoder,
        ranking=config["ranking"],
        degradation=get_ranking_degradation,
        margin=config["faces"]["margin"],
        seed=config["seed"],
        shard_size=SHARD_SIZE,
        results=get_results_root,
    script:
        "../scripts/embed_shard.py"


rule exposure:
    """Visibility and exposure of groups in face rankings at a distance (Exposure paper)."""
    input:
        study=result_path("ranking_study"),
        embeddings=get_embedding_shards,
    output:
        table=report(
            result_path("exposure_table"),
            caption=caption_path("exposure"),
            category="Exposure",
        ),
        per_probe_group=report(
            result_path("exposure_per_probe_group"),
            caption=caption_path("exposure_per_probe_group"),
            category="Exposure",
        ),
        ks=report(
            result_path("exposure_ks"),
            caption=caption_path("exposure_ks"),
            category="Exposure",
        ),
        per_ranking=result_path("exposure_per_ranking"),
        hit_curve=result_path("exposure_hit_curve"),
        figure=report(
            result_path("exposure_figure"),
            caption=caption_path("exposure_figure"),
            category="Exposure",
        ),
    log:
        log_path("ranking/exposure.log"),
    benchmark:
        benchmark_path("ranking/exposure.tsv")
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(4000),
    params:
        ranking=config["ranking"],
        encoders=RANKING_ENCODERS,
    script:
        "../scripts/exposure.py"
