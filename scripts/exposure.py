from pathlib import Path

from fairforge.faces.align import face_fraction
from fairforge.manifest import read_manifest
from fairforge.ranking import exposure_study, plot_exposure_outputs
from fairforge.workflow import faces_with_attributes, logged

with logged(snakemake.log[0]):
    r = snakemake.params.ranking
    faces = faces_with_attributes(read_manifest(snakemake.input.sources, contract="sources"),
                                  read_manifest(snakemake.input.faces, contract="faces"))
    faces = faces.loc[faces["ok"] & faces["split"].isin(r["splits"])]
    out_dir = Path(snakemake.output.table).parent
    table, _, _ = exposure_study(
        faces, "results", encoder=snakemake.params.encoders, settings=r["settings"],
        distance=r["distance"], l=r["l"], k=r["k"], seed=snakemake.params.seed,
        group_column=snakemake.params.group_by or "group",
        face_fraction=face_fraction(snakemake.params.margin), out_dir=out_dir)
    plot_exposure_outputs(out_dir, snakemake.output.figure)
    print(table.to_string(index=False))
