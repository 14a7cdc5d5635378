# The exposure study (Exposure paper): identities ranked by face encoders at a distance, one
# study per ranked dataset (ranking.datasets) and distance (ranking.distances).


rule train_encoder:
    """A face encoder trained on the train-split identities of ranking.train_dataset (near or
    far crops) through an angular-margin head, once for every ranked dataset; far crops are
    degraded as the ranking degrades probes at its first distance (through the trained
    near-to-far generator when that is learned)."""
    input:
        sources=result_path("sources", dataset=RANKING_TRAIN_DATASET),
        faces=result_path("faces", dataset=RANKING_TRAIN_DATASET),
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
    """The identities of one dataset ranked and their images: l per identity, 30% probes,
    70% gallery; the same for every distance and encoder."""
    input:
        sources=result_path("sources"),
        faces=result_path("faces"),
    output:
        study=result_path("ranking_study"),
        calibration=result_path("ranking_calibration"),
    log:
        log_path("ranking/{dataset}/study.log"),
    wildcard_constraints:
        dataset=one_of(RANKING_DATASETS),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
    params:
        l=config["ranking"]["l"],
        k=config["ranking"]["k"],
        splits=config["ranking"]["splits"],
        group_by=get_ranking_group_by,
        seed=config["seed"],
    script:
        "../scripts/ranking_study.py"


rule embed_shard:
    """One encoder's embeddings of the study images of one shard of one dataset, seen at
    one distance, in the views the settings compare (far probes; far and/or close-range
    gallery)."""
    input:
        sources=result_path("sources"),
        study=result_path("ranking_study"),
        calibration=result_path("ranking_calibration"),
        checkpoint=get_encoder_checkpoint,
        generator=get_ranking_degradation_inputs,
    output:
        result_path("embedding_shard"),
    log:
        log_path("ranking/embed/{dataset}/distance_{distance}/{encoder}/shard_{shard}.log"),
    benchmark:
        benchmark_path("ranking/embed/{dataset}/distance_{distance}/{encoder}/shard_{shard}.tsv")
    wildcard_constraints:
        dataset=one_of(RANKING_DATASETS),
        distance=one_of(RANKING_DISTANCES),
    conda:
        "../envs/fairforge.yaml"
    threads: 1  # dlib encodes on one core
    resources:
        mem_mb=per_attempt(3000),
        runtime=per_attempt(60),
    params:
        encoder=get_encoder,
        settings=config["ranking"]["settings"],
        view=get_ranking_view,
        margin=config["faces"]["margin"],
        seed=config["seed"],
        shard_size=SHARD_SIZE,
        results=get_results_root,
    script:
        "../scripts/embed_shard.py"


rule exposure:
    """Visibility and exposure of groups in face rankings at a distance (Exposure paper),
    for every ranked dataset and distance; Fig. 2's exposure averaged across encoders."""
    input:
        studies=expand(result_path("ranking_study"), dataset=RANKING_DATASETS),
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
        averaged=result_path("exposure_averaged"),
        averaged_ks=report(
            result_path("exposure_averaged_ks"),
            caption=caption_path("exposure_averaged_ks"),
            category="Exposure",
        ),
        figure=report(
            result_path("exposure_figure"),
            caption=caption_path("exposure_figure"),
            category="Exposure",
        ),
        averaged_figure=report(
            result_path("exposure_averaged_figure"),
            caption=caption_path("exposure_averaged_figure"),
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
        runs=ranking_runs(),
        settings=config["ranking"]["settings"],
        l=config["ranking"]["l"],
        k=config["ranking"]["k"],
        views=encoder_views(config),
    script:
        "../scripts/exposure.py"
