"""Running Snakemake on the repository's workflow from tests."""

import shutil
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


def repository_copy(repo: Path, dest: Path) -> Path:
    """The repository's files at ``dest`` as a clone holds them (tracked, and new ones git
    does not ignore), for a run from a repository root whose results stay out of ``repo``."""
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        if (repo / rel).is_file():  # a deleted file is still listed until committed
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / rel, dest / rel)
    return dest
