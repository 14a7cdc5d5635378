from fairforge.report import write_report
from fairforge.workflow import logged


def as_list(value) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


with logged(snakemake.log[0]):
    paths = {}
    for key, value in snakemake.input.items():
        if key in (
            "forgeries",
            "forgery_examples",
            "forgery_quality_figures",
            "face_detection_rates",
        ):
            paths[key] = as_list(value)
        elif as_list(value):
            # inputs of a disabled stage (the ranking study) are empty lists: left out
            paths[key] = str(value) if isinstance(value, str) else str(as_list(value)[0])
    run = {
        "datasets": snakemake.params.datasets,
        "variants": snakemake.params.variants,
        "metrics": snakemake.params.metrics,
        "ranking": snakemake.params.ranking,
    }
    write_report(snakemake.output[0], paths, run)
    print(f"report written to {snakemake.output[0]}")
