from fairforge.video import predict_samples_path
from fairforge.workflow import (
    all_variants,
    count_source_items,
    dataset_root,
    detector_settings,
    shard_ids,
    train_dataset,
    variant_options,
)

DATASETS = list(config["datasets"])
DETECTORS = list(config["detectors"])
METHODS = list(config["forgery"]["methods"])
VARIANTS = all_variants(config)
SHARD_SIZE = int(config["shard_size"])
RANKING_DATASET = config["ranking"].get("dataset") or DATASETS[0]
SHARDS = {d: shard_ids(count_source_items(d, config["datasets"][d]), SHARD_SIZE) for d in DATASETS}


wildcard_constraints:
    dataset="|".join(DATASETS),
    detector="|".join(DETECTORS),
    shard=r"\d+",
    method=r"[a-z0-9_]+",


# Gathers and concatenations: seconds of work, not worth a queue wait.
localrules:
    all,
    faces,
    forgery,
    samples,
    failures_per_group,
    pipeline_info,


def dataset_shards(wildcards):
    return SHARDS[wildcards.dataset]


def dataset_config(wildcards):
    return config["datasets"][wildcards.dataset]
