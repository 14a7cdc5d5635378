from pathlib import Path

from fairforge.faces import process_faces
from fairforge.images import ImageLimits
from fairforge.manifest import check_columns, write_manifest
from fairforge.sharding import read_shard
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    p = snakemake.params
    shard = read_shard(snakemake.input[0], snakemake.wildcards.shard, p.shard_size)
    check_columns(shard, "sources", snakemake.input[0])
    results_dir = Path(p.results)
    crops = Path(snakemake.output.crops)
    crops.mkdir(parents=True, exist_ok=True)
    faces = process_faces(
        shard,
        p.root,
        results_dir,
        crops.relative_to(results_dir).as_posix(),
        crop_size=p.faces["crop_size"],
        detector=p.faces["detector"],
        upsample=p.faces["upsample"],
        margin=p.faces["margin"],
        min_image_size=p.faces["min_image_size"],
        limits=ImageLimits(**p.images),
        border=p.faces["border"],
    )
    write_manifest(faces, snakemake.output.manifest, contract="faces")
    print(f"{int(faces['ok'].sum())}/{len(faces)} faces aligned")
