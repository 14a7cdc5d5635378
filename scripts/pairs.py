from fairforge.columns import VIDEO_FRAME_COLUMNS
from fairforge.faces.attributes import SOURCE_META, faces_with_attributes
from fairforge.joblog import logged
from fairforge.manifest import columns_in, read_manifest, write_manifest
from fairforge.pairs import make_pairs
from fairforge.sources import real_only
from fairforge.video import has_videos, video_pairs

with logged(snakemake.log[0]):
    # Pairing uses subjects, groups, splits and clips, never the attributes.
    path = snakemake.input.sources
    sources = read_manifest(
        path, "sources", [*SOURCE_META, *columns_in(path, [*VIDEO_FRAME_COLUMNS, "label"])]
    )
    # Forgeries are made of real faces only; a labelled dataset's own fakes are not sources.
    sources = real_only(sources)
    faces = read_manifest(snakemake.input.faces, "faces", ["image_id", "ok"])
    faces = faces_with_attributes(sources, faces[faces["image_id"].isin(sources["image_id"])])
    # Clips are forged consistently: one target clip per source clip, frame i with frame i.
    pair = video_pairs if has_videos(faces) else make_pairs
    pairs = pair(faces, seed=snakemake.params.seed)
    write_manifest(pairs, snakemake.output[0], contract="pairs")
    print(f"{len(pairs)} pairs")
