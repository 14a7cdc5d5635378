from pathlib import Path

from fairforge.forgery import forge_shard
from fairforge.manifest import read_manifest, write_manifest
from fairforge.workflow import faces_with_attributes, logged, shard_slice

with logged(snakemake.log[0]):
    p = snakemake.params
    sources = read_manifest(snakemake.input.sources, contract="sources")
    faces = read_manifest(snakemake.input.faces, contract="faces")
    faces = faces_with_attributes(sources, faces)
    shard_ids = set(shard_slice(sources, snakemake.wildcards.shard, p.shard_size)["image_id"])
    pairs = read_manifest(snakemake.input.pairs, contract="pairs")
    results_dir = Path("results")
    out_dir = Path(snakemake.output.images)
    out_dir.mkdir(parents=True, exist_ok=True)
    fakes = forge_shard(snakemake.wildcards.method, p.backend,
                        pairs.loc[pairs["image_id"].isin(shard_ids)],
                        faces, results_dir, out_dir.relative_to(results_dir).as_posix(),
                        seed=p.seed, options=p.options,
                        source_ids=sorted(shard_ids))
    write_manifest(fakes, snakemake.output.manifest, contract="forgery")
    print(f"{int(fakes['ok'].sum())}/{len(fakes)} fakes")
