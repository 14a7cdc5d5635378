rule faces_shard:
    """Detect, landmark and align the faces of one shard of source images (in an aligned
    release, a real image whose face is missed keeps the release's crop), and keep the
    transform each face was aligned by."""
    input:
        result_path("sources"),
    output:
        manifest=result_path("faces_shard"),
        crops=directory(result_path("crops_shard")),
        transforms=result_path("face_transforms_shard"),
    log:
        log_path("faces/{dataset}/shard_{shard}.log"),
    benchmark:
        benchmark_path("faces/{dataset}/shard_{shard}.tsv")
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(60),
    params:
        faces=config["faces"],
        images=config["images"],
        root=get_dataset_root,
        adapter=get_dataset_adapter,
        shard_size=SHARD_SIZE,
        results=get_results_root,
    script:
        "../scripts/faces_shard.py"


rule faces:
    """Gather the shards; write the per-group face-detection rate."""
    input:
        sources=result_path("sources"),
        shards=get_face_shards,
    output:
        manifest=result_path("faces"),
        rate=result_path("face_detection_rate"),
    log:
        log_path("faces/{dataset}/gather.log"),
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/faces.py"


rule face_backends:
    """Every detector of faces.compare_backends on every source image: detection rate,
    landmark failures and alignment error per group, with subject-bootstrap intervals."""
    input:
        result_path("sources"),
    output:
        outcomes=result_path("face_backend_outcomes"),
        table=result_path("face_detection_by_backend"),
        figure=result_path("face_backends_figure"),
    log:
        log_path("faces/{dataset}/backends.log"),
    benchmark:
        benchmark_path("faces/{dataset}/backends.tsv")
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(4000),
        runtime=per_attempt(240),
    params:
        faces=config["faces"],
        images=config["images"],
        root=get_dataset_root,
        n_boot=config["metrics"]["bootstrap"],
        seed=config["seed"],
    script:
        "../scripts/face_backends.py"
