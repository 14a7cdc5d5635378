from fairforge.tables import split_variants

# Variants that cannot run here (missing weights, no video pipeline) are not requested;
# the report lists them with the reason.
REPORT_VARIANTS, UNAVAILABLE_VARIANTS = split_variants(VARIANTS)
REPORT_PREDICTIONS = expand(
    "results/predictions/{detector}/{dataset}/{variant}.parquet",
    detector=DETECTORS,
    dataset=DATASETS,
    variant=REPORT_VARIANTS,
)
CLEAN_PREDICTIONS = expand(
    "results/predictions/{detector}/{dataset}/clean.parquet",
    detector=DETECTORS,
    dataset=DATASETS,
)


report: "../resources/report/workflow.rst"


# Seconds of work on small tables: not worth a queue wait.
localrules:
    detector_studies,
    efficiency_figure,
    report_html,


rule detection_table:
    """AUC, ACC, AP, EER per detector x dataset x variant (frame and video); robustness."""
    input:
        REPORT_PREDICTIONS,
    output:
        detection=report(
            "results/detection_table.csv",
            caption="../resources/report/detection_table.rst",
            category="Detection",
        ),
        robustness=report(
            "results/robustness_table.csv",
            caption="../resources/report/robustness_table.rst",
            category="Robustness",
        ),
    params:
        metrics=config["metrics"],
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 30 * attempt,
    log:
        "results/logs/report/detection_table.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/analysis_detection.py"


rule fairness_under_perturbation:
    """Every fairness metric per detector x variant; grayscale next to clean (FairFD Table 6)."""
    input:
        REPORT_PREDICTIONS,
    output:
        table=report(
            "results/fairness_under_perturbation.csv",
            caption="../resources/report/fairness_under_perturbation.rst",
            category="Fairness",
        ),
        grayscale=report(
            "results/grayscale_table.csv",
            caption="../resources/report/grayscale_table.rst",
            category="Fairness",
        ),
    params:
        metrics=config["metrics"],
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 30 * attempt,
    log:
        "results/logs/report/fairness_under_perturbation.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/analysis_fairness.py"


rule fairness_pvalues:
    """Subject-level permutation p-values of every clean fairness gap."""
    input:
        CLEAN_PREDICTIONS,
    output:
        report(
            "results/fairness_pvalues.csv",
            caption="../resources/report/fairness_pvalues.rst",
            category="Fairness",
        ),
    params:
        metrics=config["metrics"],
        # the resampling budget of the bootstrap; permutations are cheap, so 0 still runs 1000
        n_perm=config["metrics"]["bootstrap"] or 1000,
        seed=config["seed"],
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 30 * attempt,
    log:
        "results/logs/report/fairness_pvalues.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/analysis_pvalues.py"


rule thresholds_table:
    """FairFD Table 5: per-group thresholds fitted on validation, applied to test."""
    input:
        CLEAN_PREDICTIONS,
    output:
        report(
            "results/thresholds_table.csv",
            caption="../resources/report/thresholds_table.rst",
            category="Fairness",
        ),
    params:
        metrics=config["metrics"],
        splits=config["inference"]["splits"],
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 30 * attempt,
    log:
        "results/logs/report/thresholds_table.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/analysis_thresholds.py"


rule detector_studies:
    """What trained each detector; balanced twins (FairFD Table 4); train-on x test-on AUC."""
    input:
        models=expand("results/models/{detector}/model.pt", detector=RUN_DETECTORS),
        fairness="results/fairness_table.csv",
        detection="results/detection_table.csv",
    output:
        detectors=report(
            "results/detectors.csv",
            caption="../resources/report/detectors.rst",
            category="Detectors",
        ),
        balanced=report(
            "results/balanced_table.csv",
            caption="../resources/report/balanced_table.rst",
            category="Detectors",
        ),
        generalization=report(
            "results/generalization.csv",
            caption="../resources/report/generalization.rst",
            category="Detectors",
        ),
    params:
        detectors=DETECTORS,
        settings={d: detector_settings(config, d) for d in DETECTORS},
        train_datasets={d: train_dataset(config, d) for d in DETECTORS},
    log:
        "results/logs/report/detector_studies.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/analysis_detectors.py"


rule report_figures:
    """Robustness curves, fairness heatmap, score distributions, failure rates per group."""
    input:
        robustness="results/robustness_table.csv",
        fairness="results/fairness_under_perturbation.csv",
        detectors="results/detectors.csv",
        failures="results/failures_per_group.csv",
        predictions=CLEAN_PREDICTIONS,
    output:
        robustness=report(
            "results/figures/robustness.png",
            caption="../resources/report/robustness_figure.rst",
            category="Figures",
        ),
        heatmap=report(
            "results/figures/fairness_heatmap.png",
            caption="../resources/report/fairness_heatmap.rst",
            category="Figures",
        ),
        scores=report(
            "results/figures/score_distributions.png",
            caption="../resources/report/score_distributions.rst",
            category="Figures",
        ),
        failures=report(
            "results/figures/failures_per_group.png",
            caption="../resources/report/failures.rst",
            category="Figures",
        ),
    params:
        metrics=config["metrics"],
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 20 * attempt,
    log:
        "results/logs/report/report_figures.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/report_figures.py"


rule efficiency_figure:
    """Clean AUC against GFLOPs, parameters and latency at batch 1, one point per detector."""
    input:
        efficiency="results/efficiency.csv",
        detection="results/detection_table.csv",
    output:
        report(
            "results/figures/efficiency.png",
            caption="../resources/report/efficiency_figure.rst",
            category="Efficiency",
        ),
    log:
        "results/logs/report/efficiency_figure.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/report_efficiency.py"


rule report_html:
    """The self-contained HTML report: every table and figure, captions and a verdict."""
    input:
        detectors="results/detectors.csv",
        detection="results/detection_table.csv",
        fairness="results/fairness_table.csv",
        fairness_ci="results/fairness_ci.csv",
        fairness_per_group="results/fairness_per_group.csv",
        pvalues="results/fairness_pvalues.csv",
        robustness="results/robustness_table.csv",
        fairness_under_perturbation="results/fairness_under_perturbation.csv",
        thresholds="results/thresholds_table.csv",
        grayscale="results/grayscale_table.csv",
        balanced="results/balanced_table.csv",
        generalization="results/generalization.csv",
        failures="results/failures_per_group.csv",
        robustness_figure="results/figures/robustness.png",
        fairness_heatmap="results/figures/fairness_heatmap.png",
        score_distributions="results/figures/score_distributions.png",
        failures_figure="results/figures/failures_per_group.png",
        forgeries=expand(
            "results/{dataset}/forgeries/{method}.parquet", dataset=DATASETS, method=METHODS
        ),
        efficiency="results/efficiency.csv",
        efficiency_figure="results/figures/efficiency.png",
        forgery_examples=expand(
            "results/figures/{dataset}/forgery_examples.png", dataset=DATASETS
        ),
        face_detection_rates=expand(
            "results/{dataset}/face_detection_rate.csv", dataset=DATASETS
        ),
        # The ranking study runs only when enabled; the report leaves its section out otherwise.
        exposure_table=(
            "results/exposure_table.csv" if config["ranking"]["enabled"] else []
        ),
        exposure_per_probe_group=(
            "results/exposure_per_probe_group.csv" if config["ranking"]["enabled"] else []
        ),
        exposure_ks="results/exposure_ks.csv" if config["ranking"]["enabled"] else [],
        exposure_figure=(
            "results/figures/exposure.png" if config["ranking"]["enabled"] else []
        ),
    output:
        report(
            "results/report.html",
            caption="../resources/report/report.rst",
            category="Report",
        ),
    params:
        datasets=config["datasets"],
        variants=VARIANTS,
        metrics=config["metrics"],
        ranking={**config["ranking"], "dataset": RANKING_DATASET},
    log:
        "results/logs/report/report_html.log",
    conda:
        "../envs/fairforge.yaml"
    script:
        "../scripts/report_html.py"
