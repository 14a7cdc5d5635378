from fairforge.faces.align import face_fraction
from fairforge.joblog import logged
from fairforge.manifest import read_ids, read_manifest, write_manifest
from fairforge.ranking import embed_study, resolve_encoders
from fairforge.sharding import shard_image_ids

with logged(snakemake.log[0]):
    p, wc = snakemake.params, snakemake.wildcards
    ids = shard_image_ids(snakemake.input.sources, wc.shard, p.shard_size)
    rows = read_ids(snakemake.input.study, ids)
    encoder = resolve_encoders({wc.encoder: p.encoder})[wc.encoder]
    embeddings = embed_study(
        rows,
        p.results,
        encoder,
        p.settings,
        seed=p.seed,
        face_fraction=face_fraction(p.margin),
        calibration=read_manifest(snakemake.input.calibration),
        **p.view,
    )
    write_manifest(embeddings, snakemake.output[0])
    print(f"{len(rows)} study images, {len(embeddings)} embeddings at distance {wc.distance}")
