from fairforge.manifest import read_manifest, write_manifest
from fairforge.pairs import make_pairs
from fairforge.workflow import faces_with_attributes, logged

with logged(snakemake.log[0]):
    sources = read_manifest(snakemake.input.sources, contract="sources")
    faces = read_manifest(snakemake.input.faces, contract="faces")
    faces = faces_with_attributes(sources, faces)
    pairs = make_pairs(faces, seed=snakemake.params.seed)
    write_manifest(pairs, snakemake.output[0], contract="pairs")
    print(f"{len(pairs)} pairs")
