from pathlib import Path

from fairforge.forgery import forge_shard
from fairforge.forgery.shard import read_forgery_shard
from fairforge.joblog import logged
from fairforge.manifest import write_manifest

with logged(snakemake.log[0]):
    i, p, wc = snakemake.input, snakemake.params, snakemake.wildcards
    shard = (wc.shard, p.shard_size, wc.method, p.backend)
    ids, pairs, faces = read_forgery_shard(i.sources, i.faces, i.pairs, *shard)
    out_dir = Path(snakemake.output.images)
    out_dir.mkdir(parents=True, exist_ok=True)
    out_rel = out_dir.relative_to(p.results).as_posix()
    run = dict(seed=p.seed, options=p.options, source_ids=ids)
    fakes = forge_shard(wc.method, p.backend, pairs, faces, Path(p.results), out_rel, **run)
    write_manifest(fakes, snakemake.output.manifest, contract="forgery")
    print(f"{int(fakes['ok'].sum())}/{len(fakes)} fakes")
