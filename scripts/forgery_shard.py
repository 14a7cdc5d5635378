from pathlib import Path

from fairforge.forgery import forge_shard
from fairforge.forgery.shard import read_forgery_shard
from fairforge.manifest import write_manifest
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    p = snakemake.params
    shard_ids, pairs, faces = read_forgery_shard(
        snakemake.input.sources,
        snakemake.input.faces,
        snakemake.input.pairs,
        snakemake.wildcards.shard,
        p.shard_size,
    )
    results_dir = Path(p.results)
    out_dir = Path(snakemake.output.images)
    out_dir.mkdir(parents=True, exist_ok=True)
    fakes = forge_shard(
        snakemake.wildcards.method,
        p.backend,
        pairs,
        faces,
        results_dir,
        out_dir.relative_to(results_dir).as_posix(),
        seed=p.seed,
        options=p.options,
        source_ids=shard_ids,
    )
    write_manifest(fakes, snakemake.output.manifest, contract="forgery")
    print(f"{int(fakes['ok'].sum())}/{len(fakes)} fakes")
