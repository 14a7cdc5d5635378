import fairforge.video  # noqa: F401  (registers the frame sampler and synthetic_video)
from fairforge.joblog import logged
from fairforge.manifest import write_manifest
from fairforge.sources import list_dataset, resolved_split, split_report

with logged(snakemake.log[0]):
    p = snakemake.params
    listing = list_dataset(snakemake.wildcards.dataset, p.dataset, p.root, p.split, p.seed)
    # One row group per shard: each shard job then reads its rows alone.
    write_manifest(listing, snakemake.output[0], row_group_size=p.shard_size)
    spec = resolved_split(p.dataset["adapter"], p.split)
    report = split_report(listing, snakemake.wildcards.dataset, spec.subject_disjoint)
    report.to_csv(snakemake.output.report, index=False)
    print(f"{len(listing)} images listed, {int((~listing['ok']).sum())} without a label")
    print(report.to_string(index=False))
