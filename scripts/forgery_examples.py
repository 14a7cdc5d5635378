from fairforge.faces.attributes import faces_with_attributes
from fairforge.forgery.examples import example_sheet
from fairforge.joblog import logged
from fairforge.manifest import read_manifest

with logged(snakemake.log[0]):
    faces = faces_with_attributes(
        read_manifest(snakemake.input.sources, contract="sources"),
        read_manifest(snakemake.input.faces, contract="faces"),
    )
    forgeries = {}
    for path in snakemake.input.forgeries:
        frame = read_manifest(path, contract="forgery")
        forgeries[str(frame["method"].iloc[0])] = frame
    print(
        example_sheet(faces, forgeries, snakemake.params.results, snakemake.output[0]).to_string(
            index=False
        )
    )
