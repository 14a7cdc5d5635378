# Video variants (docs/perturbations.md section 4). On a dataset of videos the operation
# encodes each original video, the clean frames' indices are decoded from it and faces are
# found again on them; on images each clip of face crops is degraded and decoded back.
# Prediction under a video variant reads the new crops (get_predict_samples) as 'clean'.
from fairforge.video import video_variant_pattern


rule video_variant_shard:
    """Crops of the (video, method) clips that start in one shard after one video operation
    (on the original videos of a video dataset, faces found again), and their manifest."""
    input:
        sources=result_path("sources"),
        samples=result_path("samples"),
    output:
        manifest=result_path("video_variant_shard"),
        frames=directory(result_path("video_variant_frames")),
    log:
        log_path("video_variant/{dataset}/{variant}/shard_{shard}.log"),
    benchmark:
        benchmark_path("video_variant/{dataset}/{variant}/shard_{shard}.tsv")
    wildcard_constraints:
        variant=video_variant_pattern(),
    conda:
        "../envs/fairforge.yaml"
    threads: 2
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(60),
    params:
        faces=config["faces"],
        images=config["images"],
        root=get_dataset_root,
        splits=config["inference"]["splits"],
        # Clean and degraded clips, keyed by content; written atomically, shared by variants.
        cache=get_video_cache,
        shard_size=SHARD_SIZE,
        results=get_results_root,
    script:
        "../scripts/video_variant_shard.py"


rule video_variant:
    """The samples manifest of one video variant, gathered in sample order."""
    input:
        get_video_variant_shards,
    output:
        result_path("video_variant_samples"),
    log:
        log_path("video_variant/{dataset}/{variant}/gather.log"),
    wildcard_constraints:
        variant=video_variant_pattern(),
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/gather_shards.py"
