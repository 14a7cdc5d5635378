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
SHARDS = {d: shard_ids(count_source_items(d, config["datasets"][d]), SHARD_SIZE) for d in DATASETS}


wildcard_constraints:
    dataset="|".join(DATASETS),
    detector="|".join(DETECTORS),
    shard=r"\d+",
    method=r"[a-z0-9_]+",
    encoder="|".join(trained_encoders(config)) or "(?!)",


# Gathers and concatenations: seconds of work, not worth a queue wait.
localrules:
    all,
    faces,
    forgery,
    samples,
    failures_per_group,
    pipeline_info,
    efficiency_table,
    forgery_examples,


def dataset_shards(wildcards):
    return SHARDS[wildcards.dataset]


def dataset_config(wildcards):
    return config["datasets"][wildcards.dataset]
