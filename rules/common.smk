import re

from fairforge.video import predict_samples_path
from fairforge.workflow import (
    all_variants,
    count_source_items,
    dataset_root,
    degradation_inputs,
    detector_settings,
    encoder_checkpoint,
    encoder_training,
    is_external,
    model_input,
    ranking_encoders,
    train_input,
    shard_ids,
    train_dataset,
    trained_encoders,
    variant_options,
)

DATASETS = list(config["datasets"])
DETECTORS = list(config["detectors"])
# Detectors with a network (trained or imported) that the workflow runs and times.
RUN_DETECTORS = [d for d in DETECTORS if not is_external(config, d)]
METHODS = list(config["forgery"]["methods"])
VARIANTS = all_variants(config)
SHARD_SIZE = int(config["shard_size"])
RANKING_DATASET = config["ranking"].get("dataset") or DATASETS[0]
RANKING_ENCODERS = list(config["ranking"]["encoders"])
SOURCE_COUNTS = {d: count_source_items(d, config["datasets"][d]) for d in DATASETS}
SHARDS = {d: shard_ids(n, SHARD_SIZE) for d, n in SOURCE_COUNTS.items()}
# Prediction jobs cover more images than per-image shards: each loads its model once.
PREDICT_SHARD_SIZE = int(config["inference"]["shard_size"])
PREDICT_SHARDS = {d: shard_ids(n, PREDICT_SHARD_SIZE) for d, n in SOURCE_COUNTS.items()}


wildcard_constraints:
    dataset="|".join(DATASETS),
    detector="|".join(DETECTORS),
    shard=r"\d+",
    method=r"[a-z0-9_]+",
    variant="|".join(re.escape(v) for v in VARIANTS),
    encoder="|".join(re.escape(e) for e in RANKING_ENCODERS),


# Gathers and concatenations: seconds of work, not worth a queue wait.
localrules:
    all,
    sources,
    faces,
    forgery,
    predictions,
    samples,
    video_variant,
    failures_per_group,
    pipeline_info,
    efficiency_table,
    forgery_examples,


def dataset_shards(wildcards):
    return SHARDS[wildcards.dataset]


def dataset_config(wildcards):
    return config["datasets"][wildcards.dataset]
