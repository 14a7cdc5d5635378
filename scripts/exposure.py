from pathlib import Path

from fairforge.joblog import logged
from fairforge.manifest import concat_manifests, read_manifest
from fairforge.ranking import plot_exposure_outputs, rank_studies, write_exposure_outputs

with logged(snakemake.log[0]):
    p, out = snakemake.params, snakemake.output
    studies = {path: read_manifest(path) for _, _, path, _ in p.runs}
    runs = [
        (dataset, distance, studies[path], {e: concat_manifests(f) for e, f in shards.items()})
        for dataset, distance, path, shards in p.runs
    ]
    outputs = rank_studies(runs, p.settings, p.l, p.k, p.views)
    out_dir = Path(out.table).parent
    write_exposure_outputs(outputs, out_dir)
    plot_exposure_outputs(out_dir, out.figure, averaged_path=out.averaged_figure, views=p.views)
    print(outputs["exposure_table"].to_string(index=False))
