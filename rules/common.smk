# What every stage shares: the config's lists, the shard plans, wildcard constraints, and the
# input functions (get_*) the rules call with their wildcards. Paths come from
# fairforge.paths (one table), settings from fairforge.workflow (unit-tested).
import re
from functools import cache

from fairforge.paths import (
    REPORT_STUDIES,
    RESULTS,
    benchmark_path,
    log_path,
    report_paths,
    result_path,
)
from fairforge.perturb.variants import is_frame_variant, is_random_variant
from fairforge.report import caption_path
from fairforge.sharding import shard_ids
from fairforge.tables import split_variants
from fairforge.video import predict_samples_path
from fairforge.workflow import (
    all_variants,
    augmentation_studies,
    count_source_items,
    dataset_block,
    dataset_methods,
    dataset_root,
    dataset_split,
    degradation_images,
    degradation_inputs,
    detector_settings,
    encoder_checkpoint,
    encoder_train_dataset,
    encoder_training,
    encoder_training_inputs,
    encoder_views,
    feature_analysis_settings,
    feature_jobs,
    feature_settings,
    forgery_backend,
    forgery_options,
    imported_masks_input,
    imports_fakes,
    is_external,
    method_samples_inputs,
    model_input,
    predict_shard_samples,
    prediction_methods,
    quality_comparisons,
    ranked_datasets,
    rate_variants,
    ranking_degradation_inputs,
    ranking_distances,
    ranking_encoders,
    ranking_view,
    scoring_settings,
    train_compression,
    train_dataset,
    train_datasets,
    train_input,
    train_methods,
    trained_encoders,
    trained_settings,
    training_data_families,
    variant_options,
)

DATASETS = list(config["datasets"])
DETECTORS = list(config["detectors"])
# Detectors with a network (trained or imported) that the workflow runs and times.
RUN_DETECTORS = [d for d in DETECTORS if not is_external(config, d)]
EXTERNAL_DETECTORS = [d for d in DETECTORS if is_external(config, d)]
METHODS = list(config["forgery"]["methods"])
# The methods generated on each dataset (datasets.X.forgery): none on a dataset that brings
# its own fakes or is only tested on.
METHODS_OF = {d: dataset_methods(config, d) for d in DATASETS}
VARIANTS = all_variants(config)
SHARD_SIZE = int(config["shard_size"])
RANKING_ENABLED = config["ranking"]["enabled"]
# The ranked datasets and distances (ranking.datasets, ranking.distances): one study each.
RANKING_DATASETS = ranked_datasets(config)
RANKING_DISTANCES = [str(d) for d in ranking_distances(config)]
# The dataset whose train identities the trained encoders learn, once for every study.
RANKING_TRAIN_DATASET = encoder_train_dataset(config)
RANKING_ENCODERS = list(config["ranking"]["encoders"])
SOURCE_COUNTS = {d: count_source_items(d, config["datasets"][d]) for d in DATASETS}
SHARDS = {d: shard_ids(n, SHARD_SIZE) for d, n in SOURCE_COUNTS.items()}
# Prediction jobs cover more images than per-image shards: each loads its model once.
PREDICT_SHARD_SIZE = int(config["inference"]["shard_size"])
PREDICT_SHARDS = {d: shard_ids(n, PREDICT_SHARD_SIZE) for d, n in SOURCE_COUNTS.items()}
# ... and per method ("crops", the dataset's own, and each forgery method): a new method
# only adds its own jobs.
PREDICT_METHODS = {d: prediction_methods(config, d) for d in DATASETS}
# Variants that cannot run here (missing weights, no video pipeline) are not requested;
# the report lists them with the reason.
REPORT_VARIANTS, UNAVAILABLE_VARIANTS = split_variants(VARIANTS, config["variant_options"])
REPORT_PREDICTIONS = expand(
    result_path("predictions"),
    detector=DETECTORS,
    dataset=DATASETS,
    variant=REPORT_VARIANTS,
)
# Frame-mode variants (op@level~frame) that can run: each reruns face detection per dataset.
FRAME_VARIANTS = [v for v in REPORT_VARIANTS if is_frame_variant(v)]
# The Benchmark protocol's variants (op@random): they add the random-intensity table.
RANDOM_VARIANTS = [v for v in REPORT_VARIANTS if is_random_variant(v)]
# The Assessment's studies, each where the run has what it compares: codec variants at two
# or more rates, augmented twins, detectors that differ only in their training data.
RATE_VARIANTS = rate_variants(REPORT_VARIANTS)
AUGMENTATION_STUDIES = augmentation_studies(config)
TRAINING_FAMILIES = training_data_families(config)
# What each trained or imported detector is (the Benchmark's Table 4 and Figs. 4-6).
TRAINED_SETTINGS = trained_settings(config)
STUDIES = [
    study
    for study, planned in (
        ("compression_rate", RATE_VARIANTS),
        ("augmentation", AUGMENTATION_STUDIES),
        ("training_data", TRAINING_FAMILIES),
        ("benchmark", RANDOM_VARIANTS),
    )
    if planned
]
CLEAN_PREDICTIONS = expand(
    result_path("predictions"), detector=DETECTORS, dataset=DATASETS, variant="clean"
)
# FairFD A.6 and A.7 (metrics.subject_rates, metrics.features): per-subject rates, and the
# (detector, dataset) pairs whose penultimate features are drawn.
SUBJECT_RATES = bool(config["metrics"]["subject_rates"])
FEATURE_JOBS = feature_jobs(config)
FEATURE_DETECTORS = sorted({d for d, _ in FEATURE_JOBS})
# The resource that a GPU job asks for: none on a CPU run.
GPU = 0 if config["device"] == "cpu" else 1


wildcard_constraints:
    dataset="|".join(DATASETS),
    detector="|".join(DETECTORS),
    shard=r"\d+",
    method=r"[a-z0-9_]+",
    backend=r"[a-z0-9_]+",
    variant="|".join(re.escape(v) for v in VARIANTS),
    encoder="|".join(re.escape(e) for e in RANKING_ENCODERS),


# Gathers, concatenations and small tables: seconds of work, not worth a queue wait.
localrules:
    all,
    sources,
    faces,
    forgery,
    imported_masks,
    samples,
    predictions,
    video_variant,
    frame_variant,
    face_detection_under_perturbation,
    random_intensity_draws,
    random_intensity_table,
    compression_rate,
    augmentation_study,
    training_data_figure,
    failures_per_group,
    detector_studies,
    pipeline_info,
    protocol,
    forgery_examples,
    efficiency_figure,
    efficiency_average_figure,
    report_html,


def per_attempt(amount):
    """A resource that grows with each retry (memory in MB, runtime in minutes)."""
    return lambda wildcards, attempt: amount * attempt


def declared_threads(rule):
    """The threads a rule declares (``rules.NAME``), after a profile's set-threads."""
    cores = rule.rule.resources["_cores"]
    return getattr(cores, "value", cores)


def one_of(names):
    """A wildcard constraint matching exactly ``names``; nothing when there are none."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


def get_results_root(wildcards):
    """The results root, for scripts whose manifests store paths relative to it."""
    return RESULTS


# ----------------------------------------------------------------------- shard gathers


def _shards(name, shards, wildcards):
    return expand(result_path(name, **wildcards), shard=shards)


def get_source_shards(wildcards):
    return _shards("sources_shard", SHARDS[wildcards.dataset], wildcards)


def get_face_shards(wildcards):
    return _shards("faces_shard", SHARDS[wildcards.dataset], wildcards)


def get_forgery_shards(wildcards):
    return _shards("forgery_shard", SHARDS[wildcards.dataset], wildcards)


def get_prediction_shards(wildcards):
    return expand(
        result_path("prediction_shard", **wildcards),
        shard=PREDICT_SHARDS[wildcards.dataset],
        method=PREDICT_METHODS[wildcards.dataset],
    )


def get_video_variant_shards(wildcards):
    return _shards("video_variant_shard", SHARDS[wildcards.dataset], wildcards)


def get_frame_variant_shards(wildcards):
    return _shards("frame_variant_shard", SHARDS[wildcards.dataset], wildcards)


def get_frame_variant_samples(wildcards):
    return expand(
        result_path("frame_variant_samples", dataset=wildcards.dataset), variant=FRAME_VARIANTS
    )


def ranking_runs():
    """(dataset, distance, its study, {encoder: its embedding shards}) of every study that
    the exposure job ranks: each ranked dataset at each distance."""
    return [
        (
            dataset,
            distance,
            result_path("ranking_study", dataset=dataset),
            {
                encoder: expand(
                    result_path(
                        "embedding_shard", dataset=dataset, distance=distance, encoder=encoder
                    ),
                    shard=SHARDS[dataset],
                )
                for encoder in RANKING_ENCODERS
            },
        )
        for dataset in RANKING_DATASETS
        for distance in RANKING_DISTANCES
    ]


def get_embedding_shards(wildcards):
    return [path for *_, shards in ranking_runs() for files in shards.values() for path in files]


# ----------------------------------------------------------------------- datasets


def get_dataset_config(wildcards):
    """The dataset block as its adapter sees it (no split, no forgery choice)."""
    return dataset_block(config, wildcards.dataset)


def get_dataset_split(wildcards):
    return dataset_split(config, wildcards.dataset)


def get_dataset_root(wildcards):
    return str(dataset_root(wildcards.dataset, config["datasets"][wildcards.dataset]))


def get_dataset_adapter(wildcards):
    return config["datasets"][wildcards.dataset]["adapter"]


def get_forgery_backend(wildcards):
    return forgery_backend(config, wildcards.method)


def get_forgery_options(wildcards):
    return forgery_options(config, wildcards.method, get_forgery_backend(wildcards))


def get_compared_options(wildcards):
    """A backend the quality card compares: its options of the method's block."""
    return forgery_options(config, wildcards.method, wildcards.backend)


def get_forgeries(wildcards):
    return expand(
        result_path("forgery", dataset=wildcards.dataset), method=METHODS_OF[wildcards.dataset]
    )


def get_forgery_quality_fakes(wildcards):
    return [
        result_path("forgery_quality_fakes", dataset=d, method=m)
        for d in DATASETS
        for m in METHODS_OF[d]
    ]


def get_forgery_quality_compared(wildcards):
    return [
        result_path("forgery_quality_compared", dataset=d, method=m, backend=b)
        for d in DATASETS
        for m, b in quality_comparisons(config, d)
    ]


def get_forgery_separations(wildcards):
    return [result_path("forgery_separation", dataset=d) for d in DATASETS if METHODS_OF[d]]


def get_method_samples_inputs(wildcards):
    """A method's samples read the sources and faces, and its own forgeries only."""
    masks = imports_fakes(config, wildcards.dataset)
    return method_samples_inputs(wildcards.dataset, wildcards.method, masks)


def get_imported_masks(wildcards):
    return imported_masks_input(config, wildcards.dataset)


def get_imported_mask_shards(wildcards):
    return _shards("imported_masks_shard", SHARDS[wildcards.dataset], wildcards)


# ----------------------------------------------------------------------- detectors


def get_model(wildcards):
    """A trained detector's checkpoint, or an external detector's score file."""
    return model_input(config, wildcards.detector)


def get_train_input(wildcards):
    return train_input(config, wildcards.detector)


def get_detector_settings(wildcards):
    return detector_settings(config, wildcards.detector)


# once per detector: a paper's plan asks for it in each of its ten thousand prediction jobs
@cache
def _scoring_settings_of(detector):
    return scoring_settings(config, detector)


def get_scoring_settings(wildcards):
    return _scoring_settings_of(wildcards.detector)


def get_detector_training_datasets(wildcards):
    """Detector -> its arch and training set (the random-intensity table's means)."""
    return {
        d: {
            "arch": config["detectors"][d].get("arch", d),
            "train_dataset": train_dataset(config, d),
            "train_methods": train_methods(config, d),
        }
        for d in DETECTORS
    }


def get_checkpoint(wildcards):
    return config["detectors"][wildcards.detector].get("checkpoint")


def get_checkpoint_format(wildcards):
    return config["detectors"][wildcards.detector]["checkpoint_format"]


# ----------------------------------------------------------------------- variants


def get_predict_samples(wildcards):
    """The samples a prediction reads: a video variant's decoded crops, else the dataset's."""
    return predict_samples_path(wildcards.dataset, wildcards.variant)


def get_predict_shard_samples(wildcards):
    """The samples one prediction job reads: its method's only (video variants: the
    variant's decoded crops)."""
    return predict_shard_samples(wildcards.dataset, wildcards.variant, wildcards.method)


def get_train_compression(wildcards):
    return train_compression(config, wildcards.dataset)


def get_video_cache(wildcards):
    return result_path("video_cache", dataset=wildcards.dataset)


def get_degradation_inputs(wildcards):
    return degradation_inputs(config, wildcards.variant)


def get_variant_options(wildcards):
    return variant_options(config, wildcards.variant)


def get_degradation_high_images(wildcards):
    return degradation_images(config, "high_dir")


def get_degradation_low_images(wildcards):
    return degradation_images(config, "low_dir")


# ----------------------------------------------------------------------- ranking


def get_encoder_checkpoint(wildcards):
    """A trained encoder's checkpoint; pretrained encoders need none."""
    if wildcards.encoder in trained_encoders(config):
        return [encoder_checkpoint(wildcards.encoder)]
    return []


def get_ranking_group_by(wildcards):
    """The attributes forming a ranked dataset's groups: ranking.group_by, else its own."""
    return config["ranking"].get("group_by") or config["datasets"][wildcards.dataset].get(
        "group_by"
    )


def get_encoder(wildcards):
    return ranking_encoders(config)[wildcards.encoder]


def get_ranking_view(wildcards):
    return ranking_view(config, wildcards.distance)


def get_ranking_degradation_inputs(wildcards):
    return ranking_degradation_inputs(config, wildcards.distance)


def get_encoder_training(wildcards):
    return encoder_training(config, wildcards.encoder)


def get_encoder_training_inputs(wildcards):
    return encoder_training_inputs(config, wildcards.encoder)


# ----------------------------------------------------------------------- features


def get_feature_settings(wildcards):
    return feature_settings(config)


def get_feature_files(wildcards):
    return [result_path("features", detector=d, dataset=s) for d, s in FEATURE_JOBS]


def get_feature_analysis_settings(wildcards):
    return feature_analysis_settings(config)


# ----------------------------------------------------------------------- report


def get_protocol_config(wildcards):
    """What the protocol card reads: the run's config, validated and selected (one job for
    every detector, so a change of any detector's settings rewrites the card)."""
    return config


def get_report_inputs(wildcards):
    """Every table and figure the report reads (the ranking study's only when enabled)."""
    paths = report_paths(
        RESULTS,
        DATASETS,
        METHODS,
        ranking=RANKING_ENABLED,
        face_backends=bool(config["faces"]["compare_backends"]),
        subjects=SUBJECT_RATES,
        features=bool(FEATURE_JOBS),
        studies=STUDIES,
    )
    # Forgeries and their example sheets exist only where methods are generated.
    paths["forgeries"] = [
        result_path("forgery", dataset=d, method=m) for d in DATASETS for m in METHODS_OF[d]
    ]
    paths["forgery_examples"] = [
        result_path("forgery_examples", dataset=d) for d in DATASETS if METHODS_OF[d]
    ]
    # face detection on degraded frames, where frame-mode variants are configured
    frame_datasets = DATASETS if FRAME_VARIANTS else []
    paths["face_detection_under_perturbation"] = [
        result_path("face_detection_under_perturbation", dataset=d) for d in frame_datasets
    ]
    paths["face_detection_under_perturbation_figures"] = [
        result_path("face_detection_under_perturbation_figure", dataset=d) for d in frame_datasets
    ]
    return paths
