# FairFD's analyses of subjects and features (A.6, A.7): per-subject rates from the clean
# predictions (Fig. 5); a detector's penultimate features on a seeded sample of the evaluated
# split, their t-SNE map (Fig. 6) and each group's MMD to a reference group (Fig. 7).


rule subject_rates:
    """Every subject's TPR and TNR per detector on the clean evaluated split (FairFD Fig. 5)."""
    input:
        CLEAN_PREDICTIONS,
    output:
        table=report(
            result_path("subject_rates"),
            caption=caption_path("subject_rates"),
            category="Fairness",
        ),
        figure=report(
            result_path("subject_rates_figure"),
            caption=caption_path("subject_rates"),
            category="Figures",
        ),
    log:
        log_path("report/subject_rates.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(20),
    params:
        metrics=config["metrics"],
    script:
        "../scripts/subject_rates.py"


rule features:
    """A detector's penultimate features on a seeded sample of a dataset's evaluated split:
    metrics.features.per_group samples per approach and group (FairFD A.7)."""
    input:
        model=get_model,
        samples=result_path("samples"),
    output:
        result_path("features"),
    log:
        log_path("features/{detector}/{dataset}.log"),
    benchmark:
        benchmark_path("features/{detector}/{dataset}.tsv")
    wildcard_constraints:
        detector=one_of(FEATURE_DETECTORS),
    conda:
        "../envs/fairforge.yaml"
    threads: 1
    resources:
        gpu=GPU,
        mem_mb=per_attempt(4000),
        runtime=per_attempt(60),
    params:
        settings=get_feature_settings,
        inference=config["inference"],
        device=config["device"],
        results=get_results_root,
    script:
        "../scripts/features.py"


rule feature_analysis:
    """Each group's MMD to the reference group's features, and the t-SNE maps (FairFD
    Figs. 6 and 7)."""
    input:
        get_feature_files,
    output:
        mmd=report(
            result_path("feature_mmd"),
            caption=caption_path("feature_analysis"),
            category="Fairness",
        ),
        tsne=report(
            result_path("feature_tsne_figure"),
            caption=caption_path("feature_analysis"),
            category="Figures",
        ),
        mmd_figure=report(
            result_path("feature_mmd_figure"),
            caption=caption_path("feature_analysis"),
            category="Figures",
        ),
    log:
        log_path("report/feature_analysis.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(4000),
        runtime=per_attempt(30),
    params:
        settings=get_feature_analysis_settings,
    script:
        "../scripts/feature_analysis.py"
