from pathlib import Path

from fairforge.joblog import logged
from fairforge.records import write_run_records

with logged(snakemake.log[0]):
    out_dir = Path(snakemake.output.versions).parent
    write_run_records(out_dir, snakemake.params.repo, snakemake.params.config)
