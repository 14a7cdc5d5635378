rule samples:
    """Every real crop and every successful fake with its label (and the masks of the fakes
    the dataset ships); failures counted per group."""
    input:
        sources=result_path("sources"),
        faces=result_path("faces"),
        forgeries=get_forgeries,
        masks=get_imported_masks,
    output:
        samples=result_path("samples"),
        failures=result_path("failures"),
    log:
        log_path("samples/{dataset}.log"),
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/samples.py"


rule method_samples:
    """One share of the samples ("crops": the dataset's own, real and imported fakes; else a
    forgery method's fakes): all that training and prediction read, so that adding a
    forgery method leaves every other method's jobs as they are."""
    input:
        unpack(get_method_samples_inputs),
    output:
        result_path("method_samples"),
    log:
        log_path("samples/{dataset}/{method}.log"),
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/method_samples.py"


rule train_copies:
    """One share's training crops as compressed copies (datasets.X.train_compression: a
    JPEG or H.264 variant), what detectors trained on that dataset read instead."""
    input:
        result_path("method_samples"),
    output:
        samples=result_path("train_copies"),
        images=directory(result_path("train_copy_images")),
    log:
        log_path("samples/{dataset}/train_copies_{method}.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
    params:
        variant=get_train_compression,
        results=get_results_root,
        cache=get_video_cache,
    script:
        "../scripts/train_copies.py"
