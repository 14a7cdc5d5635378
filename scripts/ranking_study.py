from fairforge.faces.attributes import faces_with_attributes
from fairforge.joblog import logged
from fairforge.manifest import read_manifest, write_manifest
from fairforge.ranking import calibration_rows, check_study, split_probe_gallery

with logged(snakemake.log[0]):
    p = snakemake.params
    faces = faces_with_attributes(
        read_manifest(snakemake.input.sources, contract="sources"),
        read_manifest(snakemake.input.faces, contract="faces"),
    )
    faces = faces.loc[faces["ok"] & faces["split"].isin(p.splits)]
    study = split_probe_gallery(faces, p.l, p.seed, p.group_by or "group")
    # fail here, before any embedding job, when the ranking cannot be measured
    check_study(study, p.k, p.l)
    write_manifest(study, snakemake.output.study)
    write_manifest(calibration_rows(study), snakemake.output.calibration)
    print(study.groupby(["group", "role"]).size().to_string())
