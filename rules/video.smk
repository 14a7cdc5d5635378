# Video variants (docs/perturbations.md sections 3-4): each clip of face crops is degraded by one
# ffmpeg operation and decoded back; prediction under a video variant reads the decoded crops
# (fairforge.video.predict_samples_path) and scores them as 'clean'.
from fairforge.video import video_variant_pattern


rule video_variant_shard:
    """Decoded crops of the (video, method) clips that start in one shard, after one video
    operation, and their manifest."""
    input:
        sources="results/{dataset}/sources.parquet",
        samples="results/{dataset}/samples.parquet",
    output:
        manifest="results/{dataset}/video_variants/{variant}/shard_{shard}.parquet",
        frames=directory("results/{dataset}/video_variants/{variant}/frames/shard_{shard}"),
    wildcard_constraints:
        variant=video_variant_pattern(),
    params:
        splits=config["inference"]["splits"],
        # Clean and degraded clips, keyed by content; written atomically, shared by variants.
        cache=lambda wc: f"results/{wc.dataset}/video_cache",
        shard_size=SHARD_SIZE,
    threads: 2
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    log:
        "results/logs/video_variant/{dataset}/{variant}/shard_{shard}.log",
    benchmark:
        "results/pipeline_info/benchmarks/video_variant/{dataset}/{variant}/shard_{shard}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/video_variant.py"


rule video_variant:
    """The samples manifest of one video variant, gathered in sample order."""
    input:
        lambda wc: expand(
            "results/{{dataset}}/video_variants/{{variant}}/shard_{shard}.parquet",
            shard=dataset_shards(wc),
        ),
    output:
        "results/{dataset}/video_variants/{variant}/samples.parquet",
    wildcard_constraints:
        variant=video_variant_pattern(),
    log:
        "results/logs/video_variant/{dataset}/{variant}/gather.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/gather.py"
