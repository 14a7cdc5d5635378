"""Where a run writes its files: the results root and one table of output paths.

The rules (through ``rules/common.smk``), the report and the stages that name a path all
read it here, so renaming a file is a one-line change. Templates keep Snakemake's
wildcards (``{dataset}``, ``{shard}``, ...); ``{results}`` is the results root.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

RESULTS = "results"

OUTPUTS = {
    # sources
    "listing": "{results}/{dataset}/listing.parquet",
    "split_report": "{results}/{dataset}/split_report.csv",
    "sources_shard": "{results}/{dataset}/sources/shard_{shard}.parquet",
    "sources": "{results}/{dataset}/sources.parquet",
    # faces
    "faces_shard": "{results}/{dataset}/faces/shard_{shard}.parquet",
    "crops_shard": "{results}/{dataset}/crops/shard_{shard}",
    "faces": "{results}/{dataset}/faces.parquet",
    # the transform each face of a shard was aligned by (what the fakes' masks are warped by)
    "face_transforms_shard": "{results}/{dataset}/faces/transforms/shard_{shard}.parquet",
    "face_detection_rate": "{results}/{dataset}/face_detection_rate.csv",
    # every configured face detector on every source image (faces.compare_backends)
    "face_backend_outcomes": "{results}/{dataset}/face_backends.parquet",
    "face_detection_by_backend": "{results}/{dataset}/face_detection_by_backend.csv",
    # pairs, forgery, samples
    "pairs": "{results}/{dataset}/pairs.parquet",
    "forgery_shard": "{results}/{dataset}/forgeries/{method}/shard_{shard}.parquet",
    "forgery_images_shard": "{results}/{dataset}/forgeries/{method}/shard_{shard}",
    "forgery": "{results}/{dataset}/forgeries/{method}.parquet",
    # the manipulation masks of the fakes a dataset ships, on their crops
    "imported_masks_shard": "{results}/{dataset}/imported_masks/shard_{shard}.parquet",
    "imported_masks_images_shard": "{results}/{dataset}/imported_masks/shard_{shard}",
    "imported_masks": "{results}/{dataset}/imported_masks.parquet",
    "samples": "{results}/{dataset}/samples.parquet",
    # one share of the samples ("crops": the dataset's own; else a forgery method's fakes),
    # what training and prediction read
    "method_samples": "{results}/{dataset}/samples/{method}.parquet",
    "failures": "{results}/{dataset}/failures.csv",
    # ... with its training crops as compressed copies (datasets.X.train_compression)
    "train_copies": "{results}/{dataset}/train_copies/{method}.parquet",
    "train_copy_images": "{results}/{dataset}/train_copies/{method}",
    # forgery quality: per-fake measures, then the card over datasets, methods and groups
    "forgery_quality_fakes": "{results}/{dataset}/forgery_quality/{method}.parquet",
    # ... of the same faces forged with another backend of the method, for the card only
    # (forgery.quality.compare_backends), and those fakes
    "forgery_quality_compared": "{results}/{dataset}/forgery_quality/{backend}/{method}.parquet",
    "forgery_quality_compared_images": "{results}/{dataset}/forgery_quality/{backend}/{method}",
    # per two methods keeping the same image, how far apart their fakes of one face are
    "forgery_separation": "{results}/{dataset}/forgery_separation.parquet",
    "forgery_quality": "{results}/forgery_quality.csv",
    # detectors: training, prediction, cost
    "model": "{results}/models/{detector}/model.pt",
    "training_log": "{results}/models/{detector}/training_log.csv",
    "prediction_shard": (
        "{results}/predictions/{detector}/{dataset}/{variant}/{method}/shard_{shard}.parquet"
    ),
    "predictions": "{results}/predictions/{detector}/{dataset}/{variant}.parquet",
    # video variants: decoded crops and the clip cache they share
    "video_variant_shard": "{results}/{dataset}/video_variants/{variant}/shard_{shard}.parquet",
    "video_variant_frames": "{results}/{dataset}/video_variants/{variant}/frames/shard_{shard}",
    "video_variant_samples": "{results}/{dataset}/video_variants/{variant}/samples.parquet",
    "video_cache": "{results}/{dataset}/video_cache",
    # frame variants (op@level~frame): crops aligned again on degraded frames, and how often
    # the face detector fails on them, per group
    "frame_variant_shard": "{results}/{dataset}/frame_variants/{variant}/shard_{shard}.parquet",
    "frame_variant_crops": "{results}/{dataset}/frame_variants/{variant}/crops/shard_{shard}",
    "frame_variant_samples": "{results}/{dataset}/frame_variants/{variant}/samples.parquet",
    "face_detection_under_perturbation": (
        "{results}/{dataset}/face_detection_under_perturbation.csv"
    ),
    "face_detection_under_perturbation_figure": (
        "{results}/{dataset}/face_detection_under_perturbation.png"
    ),
    # the learned high-to-low degradation
    "degradation_generator": "{results}/degradation/high_to_low.pt",
    "degradation_samples": "{results}/degradation/samples.png",
    # tables
    "fairness_table": "{results}/fairness_table.csv",
    "fairness_per_group": "{results}/fairness_per_group.csv",
    "fairness_ci": "{results}/fairness_ci.csv",
    # per dataset x detector: whether its fairness numbers can be judged, and why not
    "fairness_standing": "{results}/fairness_standing.csv",
    "fairness_pvalues": "{results}/fairness_pvalues.csv",
    "fairness_under_perturbation": "{results}/fairness_under_perturbation.csv",
    "grayscale_table": "{results}/grayscale_table.csv",
    "thresholds_table": "{results}/thresholds_table.csv",
    "detection_table": "{results}/detection_table.csv",
    "robustness_table": "{results}/robustness_table.csv",
    # the Benchmark protocol: AUC per perturbation type at random intensity (op@random)
    "random_intensity_table": "{results}/random_intensity_table.csv",
    # the intensity each sample got under each op@random variant, per dataset
    "random_intensity_draws": "{results}/{dataset}/random_intensity_draws.csv",
    # ... the Benchmark's Fig. 3 from it; its Table 4: each detector on what it trained on
    "random_intensity_figure": "{results}/figures/random_intensity.png",
    "in_domain_table": "{results}/in_domain_table.csv",
    "detection_per_method": "{results}/detection_per_method.csv",
    "cross_manipulation": "{results}/cross_manipulation.csv",
    # codecs by bitrate: each codec variant's bits per pixel on every scored sample, and AUC
    # against it (the Assessment's Fig. 5)
    "compression_bpp": "{results}/{dataset}/compression_bpp/{variant}.csv",
    "compression_rate": "{results}/compression_rate.csv",
    # each detector beside its augmented twins (SDAug, DAug, AugMix)
    "augmentation_table": "{results}/augmentation_table.csv",
    "detectors": "{results}/detectors.csv",
    # the training protocol of every detector and dataset, with the source of each value
    "protocol": "{results}/protocol.csv",
    "balanced_table": "{results}/balanced_table.csv",
    "generalization": "{results}/generalization.csv",
    "failures_per_group": "{results}/failures_per_group.csv",
    "efficiency": "{results}/efficiency.csv",
    # FairFD A.6 and A.7: per-subject rates; penultimate features, their MMD and t-SNE
    "subject_rates": "{results}/subject_rates.csv",
    "features": "{results}/features/{detector}/{dataset}.parquet",
    "feature_mmd": "{results}/feature_mmd.csv",
    # the ranking study
    "encoder_model": "{results}/encoders/{encoder}/model.pt",
    "encoder_training_log": "{results}/encoders/{encoder}/training_log.csv",
    # one study per ranked dataset, its embeddings per distance (a far@ level or learned)
    "ranking_study": "{results}/ranking/{dataset}/study.parquet",
    "ranking_calibration": "{results}/ranking/{dataset}/calibration.parquet",
    "embedding_shard": (
        "{results}/ranking/{dataset}/distance_{distance}/embeddings/{encoder}/shard_{shard}.parquet"
    ),
    "exposure_table": "{results}/exposure_table.csv",
    "exposure_per_probe_group": "{results}/exposure_per_probe_group.csv",
    "exposure_ks": "{results}/exposure_ks.csv",
    "exposure_per_ranking": "{results}/exposure_per_ranking.parquet",
    "exposure_hit_curve": "{results}/exposure_hit_curve.csv",
    # the Exposure paper's Fig. 2: exposure averaged across encoders, with KS tests
    "exposure_averaged": "{results}/exposure_averaged.csv",
    "exposure_averaged_ks": "{results}/exposure_averaged_ks.csv",
    # figures and the report
    "robustness_figure": "{results}/figures/robustness.png",
    "fairness_heatmap": "{results}/figures/fairness_heatmap.png",
    "score_distributions": "{results}/figures/score_distributions.png",
    "failures_figure": "{results}/figures/failures_per_group.png",
    "efficiency_figure": "{results}/figures/efficiency.png",
    # per architecture, its average AUC over training sets and datasets (Benchmark Figs. 4-6)
    "efficiency_average_figure": "{results}/figures/efficiency_average.png",
    "exposure_figure": "{results}/figures/exposure.png",
    "compression_rate_figure": "{results}/figures/compression_rate.png",
    "augmentation_figure": "{results}/figures/augmentation.png",
    "cross_manipulation_figure": "{results}/figures/cross_manipulation.png",
    "training_data_figure": "{results}/figures/robustness_by_training_data.png",
    "exposure_averaged_figure": "{results}/figures/exposure_averaged.png",
    "forgery_examples": "{results}/figures/{dataset}/forgery_examples.png",
    "face_backends_figure": "{results}/figures/{dataset}/face_backends.png",
    "forgery_quality_figure": "{results}/figures/forgery_quality/{method}.png",
    "subject_rates_figure": "{results}/figures/subject_rates.png",
    "feature_tsne_figure": "{results}/figures/feature_tsne.png",
    "feature_mmd_figure": "{results}/figures/feature_mmd.png",
    "report": "{results}/report.html",
    # run records
    "versions": "{results}/pipeline_info/versions.yml",
    "resolved_config": "{results}/pipeline_info/config.resolved.yaml",
    "rulegraph": "{results}/pipeline_info/rulegraph.dot",
}

# What the report reads (its key -> the output above); per-dataset entries are lists.
REPORT_TABLES = {
    "detectors": "detectors",
    "protocol": "protocol",
    "detection": "detection_table",
    "fairness": "fairness_table",
    "fairness_ci": "fairness_ci",
    "standing": "fairness_standing",
    "fairness_per_group": "fairness_per_group",
    "pvalues": "fairness_pvalues",
    "robustness": "robustness_table",
    "detection_per_method": "detection_per_method",
    "cross_manipulation": "cross_manipulation",
    "fairness_under_perturbation": "fairness_under_perturbation",
    "thresholds": "thresholds_table",
    "grayscale": "grayscale_table",
    "balanced": "balanced_table",
    "generalization": "generalization",
    "failures": "failures_per_group",
    "efficiency": "efficiency",
    "forgery_quality": "forgery_quality",
    "robustness_figure": "robustness_figure",
    "fairness_heatmap": "fairness_heatmap",
    "score_distributions": "score_distributions",
    "failures_figure": "failures_figure",
    "efficiency_figure": "efficiency_figure",
}
# Written only when config ranking.enabled.
REPORT_EXPOSURE = {
    "exposure_table": "exposure_table",
    "exposure_per_probe_group": "exposure_per_probe_group",
    "exposure_ks": "exposure_ks",
    "exposure_figure": "exposure_figure",
    "exposure_averaged": "exposure_averaged",
    "exposure_averaged_ks": "exposure_averaged_ks",
    "exposure_averaged_figure": "exposure_averaged_figure",
}

# Written only when config metrics.subject_rates, and metrics.features names detectors.
REPORT_SUBJECTS = {
    "subject_rates": "subject_rates",
    "subject_rates_figure": "subject_rates_figure",
}
REPORT_FEATURES = {
    "feature_mmd": "feature_mmd",
    "feature_tsne_figure": "feature_tsne_figure",
    "feature_mmd_figure": "feature_mmd_figure",
}

# Written only where the run has what they compare (``report_paths(studies=...)``): codec
# variants at two or more rates; augmented twins; detectors that differ only in training data;
# op@random variants.
REPORT_STUDIES = {
    "compression_rate": {
        "compression_rate": "compression_rate",
        "compression_rate_figure": "compression_rate_figure",
    },
    "augmentation": {
        "augmentation": "augmentation_table",
        "augmentation_figure": "augmentation_figure",
        "cross_manipulation_figure": "cross_manipulation_figure",
    },
    "training_data": {"training_data_figure": "training_data_figure"},
    # the Benchmark's protocol (op@random variants): its Table 4, Fig. 3 and Figs. 4-6
    "benchmark": {
        "random_intensity": "random_intensity_table",
        "random_intensity_figure": "random_intensity_figure",
        "in_domain": "in_domain_table",
        "efficiency_average_figure": "efficiency_average_figure",
    },
}

_FIELD = re.compile(r"\{(\w+)\}")


def result_path(name: str, results: str = RESULTS, **wildcards) -> str:
    """Output ``name`` under ``results``; the wildcards given are filled in, the others stay
    ``{wildcard}`` (a Snakemake pattern)."""
    values = {"results": str(results), **{k: str(v) for k, v in wildcards.items()}}
    return _FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), OUTPUTS[name])


def log_path(name: str, results: str = RESULTS) -> str:
    """A rule's log file, ``name`` relative to the logs folder (wildcards allowed)."""
    return f"{results}/logs/{name}"


def benchmark_path(name: str, results: str = RESULTS) -> str:
    """A rule's benchmark table, ``name`` relative to the benchmarks folder."""
    return f"{results}/pipeline_info/benchmarks/{name}"


def report_paths(
    results: str = RESULTS,
    datasets: Sequence[str] = (),
    methods: Sequence[str] = (),
    ranking: bool = True,
    face_backends: bool = False,
    subjects: bool = False,
    features: bool = False,
    studies: Sequence[str] = (),
) -> dict:
    """Every file the report reads, by the report's key; the ranking study's outputs only
    with ``ranking``, the face-backend comparison only with ``face_backends`` (config
    ``faces.compare_backends`` not empty), the subject rates only with ``subjects``, the
    feature analyses only with ``features`` and the outputs of each of ``studies``
    (:data:`REPORT_STUDIES`) only when named."""
    tables = {**REPORT_TABLES, **(REPORT_EXPOSURE if ranking else {})}
    tables.update(
        {**(REPORT_SUBJECTS if subjects else {}), **(REPORT_FEATURES if features else {})}
    )
    for study in studies:
        tables.update(REPORT_STUDIES[study])
    paths: dict = {key: result_path(name, results) for key, name in tables.items()}
    paths["forgeries"] = [
        result_path("forgery", results, dataset=d, method=m) for d in datasets for m in methods
    ]
    paths["forgery_examples"] = [
        result_path("forgery_examples", results, dataset=d) for d in datasets
    ]
    paths["forgery_quality_figures"] = [
        result_path("forgery_quality_figure", results, method=m) for m in methods
    ]
    paths["face_detection_rates"] = [
        result_path("face_detection_rate", results, dataset=d) for d in datasets
    ]
    if face_backends:
        paths["face_backend_tables"] = [
            result_path("face_detection_by_backend", results, dataset=d) for d in datasets
        ]
        paths["face_backend_figures"] = [
            result_path("face_backends_figure", results, dataset=d) for d in datasets
        ]
    return paths
