# fairforge: is this face-forgery detector fair, and does it stay fair on real-world media?
# Stages live in rules/*.smk; logic lives in src/fairforge; config is validated at start.
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from fairforge.config import validate_config  # noqa: E402


configfile: "config.yaml"


validate_config(config)


include: "rules/common.smk"
include: "rules/sources.smk"
include: "rules/faces.smk"
include: "rules/forgery.smk"
include: "rules/train.smk"
include: "rules/infer.smk"
include: "rules/video.smk"
include: "rules/degradation.smk"
include: "rules/metrics.smk"
include: "rules/report.smk"
include: "rules/ranking.smk"


rule all:
    input:
        "results/fairness_table.csv",
        "results/report.html",
        "results/fairness_per_group.csv",
        "results/fairness_ci.csv",
        "results/failures_per_group.csv",
        "results/pipeline_info/versions.yml",
        "results/efficiency.csv",
        expand("results/{dataset}/face_detection_rate.csv", dataset=DATASETS),
        expand("results/figures/{dataset}/forgery_examples.png", dataset=DATASETS),
        "results/exposure_table.csv" if config["ranking"]["enabled"] else [],
        REPORT_PREDICTIONS,


onsuccess:
    from fairforge.records import write_rule_graph

    write_rule_graph(
        "results/pipeline_info/rulegraph.dot",
        workflow.main_snakefile,
        Path.cwd(),
        list(workflow.overwrite_configfiles),
    )
