from fairforge.forgery.quality import method_separation
from fairforge.joblog import logged
from fairforge.manifest import read_manifest, write_manifest

with logged(snakemake.log[0]):
    i, p = snakemake.input, snakemake.params
    faces = read_manifest(i.faces, contract="faces", columns=["image_id", "crop_path"])
    forgeries = {}
    for path in i.forgeries:
        frame = read_manifest(path, contract="forgery")
        forgeries[str(frame["method"].iloc[0])] = frame
    pairs = method_separation(forgeries, faces, p.results, snakemake.wildcards.dataset)
    write_manifest(pairs, snakemake.output[0])
    print(f"{len(pairs)} ordered method pairs of fakes compared")
