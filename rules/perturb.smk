# Frame-mode variants (op@level~frame, docs/perturbations.md section 1): the operation
# degrades the whole source frame, face detection and alignment run again on it, and
# prediction reads the new crops (get_predict_samples) and scores them as 'clean'.
from fairforge.perturb.variants import frame_variant_pattern


rule frame_variant_shard:
    """Crops aligned again on the degraded frames of the samples (clips) that start in one
    shard; a face no longer found is a row with ok=false and the reason."""
    input:
        sources=result_path("sources"),
        samples=result_path("samples"),
    output:
        manifest=result_path("frame_variant_shard"),
        crops=directory(result_path("frame_variant_crops")),
    log:
        log_path("frame_variant/{dataset}/{variant}/shard_{shard}.log"),
    benchmark:
        benchmark_path("frame_variant/{dataset}/{variant}/shard_{shard}.tsv")
    wildcard_constraints:
        variant=frame_variant_pattern(),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(60),
    params:
        faces=config["faces"],
        images=config["images"],
        root=get_dataset_root,
        splits=config["inference"]["splits"],
        variant_options=get_variant_options,
        cache=get_video_cache,
        shard_size=SHARD_SIZE,
        results=get_results_root,
    script:
        "../scripts/frame_variant_shard.py"


rule frame_variant:
    """The samples manifest of one frame variant, gathered in sample order."""
    input:
        get_frame_variant_shards,
    output:
        result_path("frame_variant_samples"),
    log:
        log_path("frame_variant/{dataset}/{variant}/gather.log"),
    wildcard_constraints:
        variant=frame_variant_pattern(),
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/gather_shards.py"


rule face_detection_under_perturbation:
    """Per frame variant and group: how often the face detector still finds the face on the
    degraded frame (table and figure)."""
    input:
        get_frame_variant_samples,
    output:
        table=result_path("face_detection_under_perturbation"),
        figure=result_path("face_detection_under_perturbation_figure"),
    log:
        log_path("frame_variant/{dataset}/detection.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        variants=FRAME_VARIANTS,
    script:
        "../scripts/face_detection_under_perturbation.py"


rule random_intensity_draws:
    """The intensity each scored sample gets under each op@random variant (seeded by the
    sample: the draws the loaders and the frame variants make)."""
    input:
        result_path("samples"),
    output:
        result_path("random_intensity_draws"),
    log:
        log_path("perturb/{dataset}/random_intensity_draws.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        variants=RANDOM_VARIANTS,
        options={v: variant_options(config, v) for v in RANDOM_VARIANTS},
        splits=config["inference"]["splits"],
    script:
        "../scripts/random_intensity_draws.py"


rule random_intensity_table:
    """The Benchmark protocol (op@random variants): AUC per perturbation type, each sample
    at a random intensity, its mean over training sets per architecture (all, and the
    commonly trained) and the population std over the types (section 4.3), with the
    intensities drawn; Fig. 3 from it."""
    input:
        robustness=result_path("robustness_table"),
        draws=expand(result_path("random_intensity_draws"), dataset=DATASETS),
    output:
        table=result_path("random_intensity_table"),
        figure=result_path("random_intensity_figure"),
    log:
        log_path("report/random_intensity_table.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        detectors=get_detector_training_datasets,
        datasets=DATASETS,
        options={v: variant_options(config, v) for v in RANDOM_VARIANTS},
        average_excludes=config["metrics"]["average_excludes"],
    script:
        "../scripts/random_intensity_table.py"
