from pathlib import Path

from fairforge.joblog import logged
from fairforge.manifest import concat_manifests, read_manifest
from fairforge.ranking import plot_exposure_outputs, rank_study, write_exposure_outputs

with logged(snakemake.log[0]):
    r = snakemake.params.ranking
    study = read_manifest(snakemake.input.study)
    embeddings = {
        label: concat_manifests(
            [p for p in snakemake.input.embeddings if Path(p).parent.name == label]
        )
        for label in snakemake.params.encoders
    }
    outputs = rank_study(study, embeddings, r["settings"], r["distance"], r["l"], r["k"])
    out_dir = Path(snakemake.output.table).parent
    write_exposure_outputs(outputs, out_dir)
    plot_exposure_outputs(out_dir, snakemake.output.figure)
    print(outputs["exposure_table"].to_string(index=False))
