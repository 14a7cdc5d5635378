# The tables: detection, robustness and fairness metrics from the predictions, the detector
# studies, failures and cost. Figures and the HTML page are in report.smk.


rule fairness_table:
    """FairFD (naive, AA, UR) and textbook fairness per detector, on clean test predictions;
    which detectors can be judged (training logs) and which forgeries fell short (failures)."""
    input:
        predictions=CLEAN_PREDICTIONS,
        training_logs=expand(result_path("training_log"), detector=RUN_DETECTORS),
        failures=expand(result_path("failures"), dataset=DATASETS),
    output:
        table=report(
            result_path("fairness_table"),
            caption=caption_path("fairness_table"),
            category="Fairness",
        ),
        per_group=report(
            result_path("fairness_per_group"),
            caption=caption_path("per_group"),
            category="Fairness",
        ),
        ci=report(
            result_path("fairness_ci"),
            caption=caption_path("fairness_ci"),
            category="Fairness",
        ),
        standing=report(
            result_path("fairness_standing"),
            caption=caption_path("fairness_standing"),
            category="Fairness",
        ),
    log:
        log_path("metrics/fairness_table.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(30),
    params:
        metrics=config["metrics"],
        seed=config["seed"],
    script:
        "../scripts/fairness_table.py"


rule detection_table:
    """AUC, ACC, AP, EER per detector x dataset x variant (frame and video); robustness."""
    input:
        REPORT_PREDICTIONS,
    output:
        detection=report(
            result_path("detection_table"),
            caption=caption_path("detection_table"),
            category="Detection",
        ),
        robustness=report(
            result_path("robustness_table"),
            caption=caption_path("robustness_table"),
            category="Robustness",
        ),
    log:
        log_path("report/detection_table.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(30),
    params:
        metrics=config["metrics"],
    script:
        "../scripts/detection_table.py"


rule method_tables:
    """AUC per forgery method (real vs that method's fakes); train-on x test-on method AUC."""
    input:
        REPORT_PREDICTIONS,
    output:
        per_method=report(
            result_path("detection_per_method"),
            caption=caption_path("detection_per_method"),
            category="Detection",
        ),
        cross=report(
            result_path("cross_manipulation"),
            caption=caption_path("cross_manipulation"),
            category="Detection",
        ),
    log:
        log_path("report/method_tables.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(30),
    params:
        metrics=config["metrics"],
        settings={d: detector_settings(config, d) for d in DETECTORS},
    script:
        "../scripts/method_tables.py"


rule fairness_under_perturbation:
    """Every fairness metric per detector x variant; grayscale next to clean (FairFD Table 6)."""
    input:
        REPORT_PREDICTIONS,
    output:
        table=report(
            result_path("fairness_under_perturbation"),
            caption=caption_path("fairness_under_perturbation"),
            category="Fairness",
        ),
        grayscale=report(
            result_path("grayscale_table"),
            caption=caption_path("grayscale_table"),
            category="Fairness",
        ),
    log:
        log_path("report/fairness_under_perturbation.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(30),
    params:
        metrics=config["metrics"],
    script:
        "../scripts/fairness_under_perturbation.py"


rule fairness_pvalues:
    """Subject-level permutation p-values of every clean fairness gap."""
    input:
        CLEAN_PREDICTIONS,
    output:
        report(
            result_path("fairness_pvalues"),
            caption=caption_path("fairness_pvalues"),
            category="Fairness",
        ),
    log:
        log_path("report/fairness_pvalues.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(30),
    params:
        metrics=config["metrics"],
        # the resampling budget of the bootstrap; permutations are cheap, so 0 still runs 1000
        n_perm=config["metrics"]["bootstrap"] or 1000,
        seed=config["seed"],
    script:
        "../scripts/fairness_pvalues.py"


rule thresholds_table:
    """FairFD Table 5: per-group thresholds fitted on validation, applied to test."""
    input:
        CLEAN_PREDICTIONS,
    output:
        report(
            result_path("thresholds_table"),
            caption=caption_path("thresholds_table"),
            category="Fairness",
        ),
    log:
        log_path("report/thresholds_table.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(30),
    params:
        metrics=config["metrics"],
        splits=config["inference"]["splits"],
    script:
        "../scripts/thresholds_table.py"


rule detector_studies:
    """What trained each detector; balanced twins (FairFD Table 4); train-on x test-on AUC."""
    input:
        models=expand(result_path("model"), detector=RUN_DETECTORS),
        protocol=result_path("protocol"),
        fairness=result_path("fairness_table"),
        detection=result_path("detection_table"),
    output:
        detectors=report(
            result_path("detectors"),
            caption=caption_path("detectors"),
            category="Detectors",
        ),
        balanced=report(
            result_path("balanced_table"),
            caption=caption_path("balanced_table"),
            category="Detectors",
        ),
        generalization=report(
            result_path("generalization"),
            caption=caption_path("generalization"),
            category="Detectors",
        ),
    log:
        log_path("report/detector_studies.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        detectors=DETECTORS,
        settings={d: detector_settings(config, d) for d in DETECTORS},
        train_datasets={d: train_dataset(config, d) for d in DETECTORS},
        min_val_auc=config["metrics"]["min_val_auc"],
    script:
        "../scripts/detector_studies.py"


rule failures_per_group:
    """Face-detection and forgery failures per group, all datasets: each rate with its
    interval, and per stage the test that every group fails at the same rate."""
    input:
        expand(result_path("failures"), dataset=DATASETS),
    output:
        report(
            result_path("failures_per_group"),
            caption=caption_path("failures"),
            category="Failures",
        ),
    log:
        log_path("metrics/failures_per_group.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        seed=config["seed"],
    script:
        "../scripts/failures_per_group.py"
