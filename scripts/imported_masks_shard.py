from pathlib import Path

from fairforge.images import ImageLimits
from fairforge.joblog import logged
from fairforge.manifest import write_manifest
from fairforge.video.fake_masks import shard_fake_masks

with logged(snakemake.log[0]):
    i, p, wc = snakemake.input, snakemake.params, snakemake.wildcards
    out_dir = Path(snakemake.output.images)
    out_dir.mkdir(parents=True, exist_ok=True)
    out_rel = out_dir.relative_to(p.results).as_posix()
    shard, dataset = (wc.shard, p.shard_size), (wc.dataset, p.dataset)
    where = (p.root, Path(p.results), out_rel)
    run = dict(border=p.border, limits=ImageLimits(**p.images))
    masks = shard_fake_masks(i.sources, i.faces, i.transforms, shard, dataset, *where, **run)
    write_manifest(masks, snakemake.output.manifest, contract="imported_masks")
    print(masks.groupby(["method", "mask_source", "ok"]).size().to_string())
