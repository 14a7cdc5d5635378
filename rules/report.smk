# The figures, the self-contained HTML page, and the run records that come with them.


report: caption_path("workflow")


rule report_figures:
    """Robustness curves, fairness heatmap, score distributions, failure rates per group."""
    input:
        robustness=result_path("robustness_table"),
        fairness=result_path("fairness_under_perturbation"),
        detectors=result_path("detectors"),
        failures=result_path("failures_per_group"),
        predictions=CLEAN_PREDICTIONS,
    output:
        robustness=report(
            result_path("robustness_figure"),
            caption=caption_path("robustness_figure"),
            category="Figures",
        ),
        heatmap=report(
            result_path("fairness_heatmap"),
            caption=caption_path("fairness_heatmap"),
            category="Figures",
        ),
        scores=report(
            result_path("score_distributions"),
            caption=caption_path("score_distributions"),
            category="Figures",
        ),
        failures=report(
            result_path("failures_figure"),
            caption=caption_path("failures"),
            category="Figures",
        ),
    log:
        log_path("report/report_figures.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(20),
    params:
        metrics=config["metrics"],
    script:
        "../scripts/report_figures.py"


rule efficiency_figure:
    """Clean AUC against GFLOPs, parameters and latency at batch 1, one point per detector."""
    input:
        efficiency=result_path("efficiency"),
        detection=result_path("detection_table"),
    output:
        report(
            result_path("efficiency_figure"),
            caption=caption_path("efficiency_figure"),
            category="Efficiency",
        ),
    log:
        log_path("report/efficiency_figure.log"),
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/efficiency_figure.py"


rule efficiency_average_figure:
    """Benchmark Figs. 4-6: per architecture, its clean AUC averaged over its training sets
    and the datasets, against GFLOPs, parameters and latency at batch 1."""
    input:
        efficiency=result_path("efficiency"),
        detection=result_path("detection_table"),
    output:
        report(
            result_path("efficiency_average_figure"),
            caption=caption_path("efficiency_figure"),
            category="Efficiency",
        ),
    log:
        log_path("report/efficiency_average_figure.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        families=TRAINED_SETTINGS,
    script:
        "../scripts/efficiency_figure.py"


rule forgery_examples:
    """FairFD Figure 2: per group a source, its target, every method's fake and mask."""
    input:
        sources=result_path("sources"),
        faces=result_path("faces"),
        forgeries=get_forgeries,
    output:
        result_path("forgery_examples"),
    log:
        log_path("forgery/{dataset}/examples.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        results=get_results_root,
    script:
        "../scripts/forgery_examples.py"


rule report_html:
    """The self-contained HTML report: every table and figure, captions and a verdict."""
    input:
        unpack(get_report_inputs),
    output:
        report(
            result_path("report"),
            caption=caption_path("report"),
            category="Report",
        ),
    log:
        log_path("report/report_html.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        datasets=config["datasets"],
        variants=VARIANTS,
        variant_options=config["variant_options"],
        metrics=config["metrics"],
        ranking={
            **config["ranking"],
            "datasets": RANKING_DATASETS,
            "train_dataset": RANKING_TRAIN_DATASET,
        },
    script:
        "../scripts/report_html.py"


rule protocol:
    """The protocol card: every detector's resolved training protocol and every dataset's
    split, each value with its source (paper section, recipe, config or default)."""
    output:
        report(result_path("protocol"), caption=caption_path("protocol"), category="Detectors"),
    log:
        log_path("report/protocol.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        config=get_protocol_config,
    script:
        "../scripts/protocol.py"


rule pipeline_info:
    """Versions, git commit, config hash and the resolved config of this run."""
    output:
        versions=result_path("versions"),
        config=result_path("resolved_config"),
    log:
        log_path("pipeline_info.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        config=config,
        repo=workflow.basedir,
    script:
        "../scripts/pipeline_info.py"
