"""Running Snakemake on the repository's workflow from tests."""

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def snakemake_command(
    repo: Path, workdir: Path, *args: str, configfiles: Sequence[Path] | None = None
) -> list[str]:
    """The command line of ``snakemake ARGS`` on ``repo``'s Snakefile in ``workdir`` with
    ``configfiles`` (default: the workdir's config.yaml)."""
    if configfiles is None:
        configfiles = [workdir / "config.yaml"]
    return [
        *SNAKEMAKE,
        "--snakefile",
        str(repo / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        *(str(path) for path in configfiles),
        *args,
    ]


def snakemake(
    repo: Path,
    workdir: Path,
    *args: str,
    check: bool = True,
    timeout: int = 3600,
    configfiles: Sequence[Path] | None = None,
) -> subprocess.CompletedProcess:
    """``snakemake ARGS`` on ``repo``'s Snakefile in ``workdir`` with ``configfiles``
    (default: its config.yaml)."""
    cmd = snakemake_command(repo, workdir, *args, configfiles=configfiles)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
        )
    return proc
