rule predict:
    """Scores of one detector under one test-time variant on one shard of a dataset and one
    method ("crops", the dataset's own, or a forgery method): its samples among inference.shard_size source
    images, a video's frames all in one shard, of which the detector's frames_test are scored.
    Split by method so that a new method adds jobs and reruns none."""
    input:
        model=get_model,
        sources=result_path("sources"),
        samples=get_predict_shard_samples,
        degradation=get_degradation_inputs,
    output:
        result_path("prediction_shard"),
    log:
        log_path("predict/{detector}/{dataset}/{variant}/{method}/shard_{shard}.log"),
    benchmark:
        benchmark_path("predict/{detector}/{dataset}/{variant}/{method}/shard_{shard}.tsv")
    wildcard_constraints:
        detector=one_of(RUN_DETECTORS),
    conda:
        "../envs/fairforge.yaml"
    # One core per job on a CPU: small models gain little from a second torch thread, and
    # jobs run side by side instead (profiles/slurm gives GPU jobs more).
    threads: 1
    resources:
        gpu=GPU,
        mem_mb=per_attempt(3000),
        runtime=per_attempt(60),
    params:
        inference=config["inference"],
        device=config["device"],
        variant_options=get_variant_options,
        results=get_results_root,
        scoring=get_scoring_settings,
    script:
        "../scripts/predict.py"


rule predictions:
    """One detector's scores on one dataset under one variant, gathered in sample order."""
    input:
        get_prediction_shards,
    output:
        result_path("predictions"),
    log:
        log_path("predict/{detector}/{dataset}/{variant}/gather.log"),
    wildcard_constraints:
        detector=one_of(RUN_DETECTORS),
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/gather_shards.py"


rule external_scores:
    """A detector run elsewhere: its score file, checked against the samples it scores."""
    input:
        scores=get_model,
        samples=get_predict_samples,
    output:
        result_path("predictions"),
    log:
        log_path("predict/{detector}/{dataset}/{variant}.log"),
    wildcard_constraints:
        detector=one_of(EXTERNAL_DETECTORS),
    conda:
        "../envs/fairforge.yaml"
    params:
        results=get_results_root,
        splits=config["inference"]["splits"],
        variant_options=get_variant_options,
    script:
        "../scripts/external_scores.py"


rule efficiency:
    """Parameters, FLOPs per image, latency at batch 1 and 32 and peak memory of every run
    detector, timed together: turn by turn in rounds, so that the machine's load falls on all
    alike, with a check that detectors of one architecture agree."""
    input:
        models=expand(result_path("model"), detector=RUN_DETECTORS),
    output:
        result_path("efficiency"),
    log:
        log_path("efficiency/table.log"),
    conda:
        "../envs/fairforge.yaml"
    # Latency is measured alone: every core (so no other local job runs beside it), and
    # `timing`, which the profiles cap at 1 (no two timing jobs at once, on a cluster too);
    # the detectors are timed with the torch threads of a `predict` job (params.threads).
    threads: lambda wc: workflow.cores
    resources:
        gpu=GPU,
        timing=1,
        mem_mb=per_attempt(4000 + 500 * len(RUN_DETECTORS)),
        runtime=per_attempt(30 + 5 * len(RUN_DETECTORS)),
    params:
        detectors=RUN_DETECTORS,
        device=config["device"],
        threads=declared_threads(rules.predict),
        timing=config["efficiency"],
    script:
        "../scripts/efficiency.py"
