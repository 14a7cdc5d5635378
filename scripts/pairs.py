from fairforge.manifest import read_manifest, write_manifest
from fairforge.pairs import make_pairs
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    sources = read_manifest(snakemake.input.sources, contract="sources")
    faces = read_manifest(snakemake.input.faces, contract="faces")
    faces = faces.merge(sources[["image_id", "subject_id", "group", "split"]], on="image_id")
    pairs = make_pairs(faces, seed=snakemake.params.seed)
    write_manifest(pairs, snakemake.output[0], contract="pairs")
    print(f"{len(pairs)} pairs")
