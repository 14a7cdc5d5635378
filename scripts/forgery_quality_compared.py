from pathlib import Path

from fairforge.joblog import logged
from fairforge.manifest import read_manifest, write_manifest
from fairforge.tables.forgery_quality import measure_compared

with logged(snakemake.log[0]):
    i, p, wc = snakemake.input, snakemake.params, snakemake.wildcards
    out_dir = Path(snakemake.output.images)
    out_dir.mkdir(parents=True, exist_ok=True)
    ids = read_manifest(i.forgery, contract="forgery", columns=["image_id"])["image_id"]
    fakes, made = measure_compared(
        wc.method, wc.backend, (i.sources, i.faces, i.pairs), ids.astype(str).tolist(),
        p.results, out_dir.relative_to(p.results).as_posix(), wc.dataset, p.seed, p.options,
        identity_per_group=p.identity_per_group,
    )  # fmt: skip
    write_manifest(fakes, snakemake.output.fakes)
    print(f"{wc.backend}: {int(made['ok'].sum())}/{len(made)} fakes, {len(fakes)} measured")
