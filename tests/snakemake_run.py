"""Running Snakemake on the repository's workflow from tests."""

import subprocess
import sys
from pathlib import Path

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def snakemake(
    repo: Path, workdir: Path, *args: str, check: bool = True, timeout: int = 3600
) -> subprocess.CompletedProcess:
    """``snakemake ARGS`` on ``repo``'s Snakefile in ``workdir`` with its config.yaml."""
    cmd = [
        *SNAKEMAKE,
        "--snakefile",
        str(repo / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(workdir / "config.yaml"),
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
        )
    return proc
