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


rule in_domain_table:
    """Benchmark Table 4: each detector on the test split of what it trained on (its
    dataset, or the manipulations of it it trained on), with the averages."""
    input:
        [
            result_path("predictions", detector=d, dataset=on, variant="clean")
            for d in TRAINED_SETTINGS
            for on in train_datasets(config, d)
        ],
    output:
        report(
            result_path("in_domain_table"),
            caption=caption_path("in_domain_table"),
            category="Detection",
        ),
    log:
        log_path("report/in_domain_table.log"),
    conda:
        "../envs/fairforge.yaml"
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(30),
    params:
        settings=TRAINED_SETTINGS,
        datasets=DATASETS,
        metrics=config["metrics"],
    script:
        "../scripts/in_domain_table.py"


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


# The Assessment's studies, each planned only where the run has what it compares.


rule compression_bpp:
    """Bits per pixel of one codec variant (JPEG, the learned compression) on every scored
    sample of a dataset."""
    input:
        result_path("samples"),
    output:
        result_path("compression_bpp"),
    log:
        log_path("perturb/{dataset}/compression_bpp/{variant}.log"),
    wildcard_constraints:
        variant=one_of(RATE_VARIANTS),
    conda:
        "../envs/fairforge.yaml"
    # the learned codec's analysis transform on one CPU core: 0.35 s (quality 1-5) to 0.7 s
    # (6-8) per 300 px crop, some 22,000 crops on FF++'s test split
    threads: 4
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(480),
    params:
        options=get_variant_options,
        split=config["metrics"]["evaluation_split"],
        results=get_results_root,
    script:
        "../scripts/compression_bpp.py"


rule compression_rate:
    """Assessment Fig. 5: each detector's AUC under each codec against its bits per pixel."""
    input:
        robustness=result_path("robustness_table"),
        bpp=expand(result_path("compression_bpp"), dataset=DATASETS, variant=RATE_VARIANTS),
    output:
        table=report(
            result_path("compression_rate"),
            caption=caption_path("compression_rate"),
            category="Robustness",
        ),
        figure=report(
            result_path("compression_rate_figure"),
            caption=caption_path("compression_rate"),
            category="Figures",
        ),
    log:
        log_path("report/compression_rate.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        dataset=DATASETS[0],
    script:
        "../scripts/compression_rate.py"


rule augmentation_study:
    """Assessment Tables 4-6, Figs. 6-8: each detector beside its SDAug, DAug and AugMix
    twins on every variant, category and dataset; per test method for single-method ones."""
    input:
        robustness=result_path("robustness_table"),
        cross=result_path("cross_manipulation"),
    output:
        table=report(
            result_path("augmentation_table"),
            caption=caption_path("augmentation"),
            category="Robustness",
        ),
        figure=report(
            result_path("augmentation_figure"),
            caption=caption_path("augmentation"),
            category="Figures",
        ),
        cross=report(
            result_path("cross_manipulation_figure"),
            caption=caption_path("augmentation"),
            category="Figures",
        ),
    log:
        log_path("report/augmentation_study.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        twins=AUGMENTATION_STUDIES,
        dataset=DATASETS[0],
    script:
        "../scripts/augmentation_study.py"


rule training_data_figure:
    """Assessment Fig. 4: category means of detectors that differ only in training data."""
    input:
        result_path("robustness_table"),
    output:
        report(
            result_path("training_data_figure"),
            caption=caption_path("training_data"),
            category="Figures",
        ),
    log:
        log_path("report/training_data_figure.log"),
    conda:
        "../envs/fairforge.yaml"
    params:
        families=TRAINING_FAMILIES,
        dataset=DATASETS[0],
    script:
        "../scripts/training_data_figure.py"
