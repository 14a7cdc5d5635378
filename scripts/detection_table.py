from fairforge.joblog import logged
from fairforge.metrics import Conventions
from fairforge.tables import detection_table, robustness_table, table_from_files

with logged(snakemake.log[0]):
    m = snakemake.params.metrics
    detection = table_from_files(
        snakemake.input,
        detection_table,
        conventions=Conventions.from_metrics(m),
        split=m["evaluation_split"],
    )
    detection.to_csv(snakemake.output.detection, index=False, float_format="%.6g")
    robustness = robustness_table(detection, categories=m["robustness_categories"])
    robustness.to_csv(snakemake.output.robustness, index=False, float_format="%.6g")
    print(detection.to_string(index=False))
