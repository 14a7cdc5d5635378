# Video variants (PERTURBATIONS.md sections 2-3): each clip of face crops is degraded by one
# ffmpeg operation and decoded back; prediction under a video variant reads the decoded crops
# (fairforge.video.predict_samples_path) and scores them as 'clean'.
from fairforge.video import video_variant_pattern


rule video_variant:
    """Decoded crops of every (video, method) clip after one video operation, and their manifest."""
    input:
        "results/{dataset}/samples.parquet",
    output:
        manifest="results/{dataset}/video_variants/{variant}/samples.parquet",
        frames=directory("results/{dataset}/video_variants/{variant}/frames"),
    wildcard_constraints:
        variant=video_variant_pattern(),
    params:
        splits=config["inference"]["splits"],
        # Clean and degraded clips, keyed by content; written atomically, shared by variants.
        cache=lambda wc: f"results/{wc.dataset}/video_cache",
    threads: 2
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    log:
        "results/logs/video_variant/{dataset}/{variant}.log",
    benchmark:
        "results/pipeline_info/benchmarks/video_variant/{dataset}/{variant}.tsv"
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/video_variant.py"
