from pathlib import Path

from fairforge.faces import process_faces, stage_options
from fairforge.images import ImageLimits
from fairforge.joblog import logged
from fairforge.manifest import check_columns, write_manifest
from fairforge.sharding import read_shard

with logged(snakemake.log[0]):
    p = snakemake.params
    shard = read_shard(snakemake.input[0], snakemake.wildcards.shard, p.shard_size)
    check_columns(shard, "sources", snakemake.input[0])
    crops = Path(snakemake.output.crops)
    crops.mkdir(parents=True, exist_ok=True)
    crops_rel = crops.relative_to(p.results).as_posix()
    limits = ImageLimits(**p.images)
    faces = process_faces(
        shard, p.root, Path(p.results), crops_rel, limits=limits, **stage_options(p.faces)
    )
    write_manifest(faces, snakemake.output.manifest, contract="faces")
    print(f"{int(faces['ok'].sum())}/{len(faces)} faces aligned")
