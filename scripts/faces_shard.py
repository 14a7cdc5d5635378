from pathlib import Path

import fairforge.video  # noqa: F401  (the video datasets' adapters register on import)
from fairforge.faces import face_transforms, process_faces, stage_options
from fairforge.images import ImageLimits
from fairforge.joblog import logged
from fairforge.manifest import check_columns, write_manifest
from fairforge.sharding import read_shard
from fairforge.sources import ADAPTERS

with logged(snakemake.log[0]):
    p, out = snakemake.params, snakemake.output
    shard = read_shard(snakemake.input[0], snakemake.wildcards.shard, p.shard_size)
    check_columns(shard, "sources", snakemake.input[0])
    Path(out.crops).mkdir(parents=True, exist_ok=True)
    crops_rel = Path(out.crops).relative_to(p.results).as_posix()
    aligned = ADAPTERS.create(p.adapter).release_aligned(shard["path"])
    run = dict(limits=ImageLimits(**p.images), release_aligned=aligned, with_matrix=True)
    faces = process_faces(
        shard, p.root, Path(p.results), crops_rel, **run, **stage_options(p.faces)
    )
    write_manifest(faces.drop(columns="matrix"), out.manifest, contract="faces")
    write_manifest(face_transforms(faces), out.transforms, contract="face_transforms")
    print(f"{int(faces['ok'].sum())}/{len(faces)} faces aligned")
