# fairforge: is this face-forgery detector fair, and does it stay fair on real-world media?
# One rules/*.smk per stage, in pipeline order; logic lives in src/fairforge, every output
# path in fairforge.paths; config is validated at start.
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from fairforge.config import validate_config  # noqa: E402
from fairforge.workflow import select_config  # noqa: E402

# The demo's config.yaml is the default config. A --configfile (a paper's file, then a second
# file with local paths) replaces it instead of being merged over it, so that no demo key
# leaks into a paper run; the demo's variants layer over it by naming it first
# (--configfile config.yaml configs/mtcnn.yaml).
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


# A cluster job parses the workflow again; the planning process has checked the names.
validate_config(config, check_references=workflow.is_main_process)
# `select:` keeps a part of the config (one detector of a paper): every process the same.
select_config(config)


include: "rules/common.smk"
include: "rules/sources.smk"
include: "rules/faces.smk"
include: "rules/pairs.smk"
include: "rules/forgery.smk"
include: "rules/quality.smk"
include: "rules/samples.smk"
include: "rules/train.smk"
include: "rules/infer.smk"
include: "rules/video.smk"
include: "rules/perturb.smk"
include: "rules/degradation.smk"
include: "rules/metrics.smk"
include: "rules/features.smk"
include: "rules/ranking.smk"
include: "rules/report.smk"


rule all:
    input:
        result_path("fairness_table"),
        result_path("report"),
        result_path("fairness_per_group"),
        result_path("fairness_ci"),
        result_path("failures_per_group"),
        result_path("versions"),
        result_path("protocol"),
        result_path("efficiency"),
        expand(result_path("face_detection_rate"), dataset=DATASETS),
        expand(
            result_path("face_detection_under_perturbation"),
            dataset=DATASETS if FRAME_VARIANTS else [],
        ),
        # where forgeries are generated (none on a dataset with forgery: false)
        expand(result_path("forgery_examples"), dataset=[d for d in DATASETS if METHODS_OF[d]]),
        result_path("exposure_table") if RANKING_ENABLED else [],
        result_path("random_intensity_table") if RANDOM_VARIANTS else [],
        [result_path(name) for study in STUDIES for name in REPORT_STUDIES[study].values()],
        REPORT_PREDICTIONS,


onsuccess:
    from fairforge.records import write_rule_graph

    write_rule_graph(result_path("rulegraph"), workflow.dag)
