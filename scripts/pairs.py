from fairforge.manifest import read_manifest, write_manifest
from fairforge.pairs import make_pairs
from fairforge.video import has_videos, video_pairs
from fairforge.workflow import faces_with_attributes, logged

with logged(snakemake.log[0]):
    sources = read_manifest(snakemake.input.sources, contract="sources")
    faces = read_manifest(snakemake.input.faces, contract="faces")
    faces = faces_with_attributes(sources, faces)
    # Clips are forged consistently: one target clip per source clip, frame i with frame i.
    pair = video_pairs if has_videos(faces) else make_pairs
    pairs = pair(faces, seed=snakemake.params.seed)
    write_manifest(pairs, snakemake.output[0], contract="pairs")
    print(f"{len(pairs)} pairs")
