"""Does the workflow still write exactly what a reference commit wrote?

One small real run of the workflow (tests/data/tiny_config.yaml, the run the workflow tests
share: images and clips, every forgery method, a detector trained for one epoch, a frame and
a video variant, the ranking study) per side, then every csv, parquet and json under
``results`` compared: byte-equal, or else equal as tables once the timing columns are
dropped (``seconds`` of the training logs and the efficiency table's per-batch-size
measurements, :data:`fairforge.columns.EFFICIENCY_BATCH_COLUMNS`), or different.

    python benchmarks/check_output_identity.py --against main            # both runs, compared
    python benchmarks/check_output_identity.py run /tmp/ref --repo /tmp/ref_sources
    python benchmarks/check_output_identity.py compare /tmp/ref /tmp/new

``run`` takes the workflow and the package from ``--repo`` (default: this working tree) and
holds /tmp/fairforge-heavy.lock while Snakemake runs, so that one such run uses the machine
at a time. ``--against REV`` runs ``REV``'s sources (``git archive``) and this working
tree's.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TINY_CONFIG = Path("tests") / "data" / "tiny_config.yaml"
COMPARED = (".csv", ".parquet", ".json")
LOCK = "/tmp/fairforge-heavy.lock"


def timing_columns(columns) -> list[str]:
    """The columns of a table that measure time or memory, not results."""
    from fairforge.columns import EFFICIENCY_BATCH_COLUMNS

    def timed(name: str) -> bool:
        stem = name.rsplit("_bs", 1)[0] if "_bs" in name else None
        return name == "seconds" or stem in EFFICIENCY_BATCH_COLUMNS

    return [c for c in columns if timed(str(c))]


# --------------------------------------------------------------------------- the runs


def run(out: Path, repo: Path = REPO, cores: int = 2) -> None:
    """The tiny run of ``repo``'s workflow and package into ``out`` (its config copied there)."""
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(repo / TINY_CONFIG, out / "config.yaml")
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(repo / "Snakefile"),
        "--directory",
        str(out),
        "--configfile",
        str(out / "config.yaml"),
        "--cores",
        str(cores),
        "all",
    ]
    if shutil.which("flock"):
        command = ["flock", LOCK, *command]
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    with open(out / "snakemake.log", "w") as log:
        subprocess.run(command, check=True, env=env, stdout=log, stderr=subprocess.STDOUT)
    print(f"ran {repo} into {out}")


# --------------------------------------------------------------------------- comparing


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read(path: Path):
    import pandas as pd

    return pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path)


def _table_differences(a: Path, b: Path) -> tuple[list[str], list[str]]:
    """(differences, timing columns) of two tables whose bytes differ."""
    import pandas as pd

    one, two = _read(a), _read(b)
    if list(one.columns) != list(two.columns):
        return [f"columns {list(one.columns)} against {list(two.columns)}"], []
    timing = timing_columns(one.columns)
    one, two = one.drop(columns=timing), two.drop(columns=timing)
    if one.shape != two.shape:
        return [f"shape {one.shape} against {two.shape}"], timing
    differ = []
    for col in one.columns:
        try:
            pd.testing.assert_series_equal(one[col], two[col], check_exact=True)
        except AssertionError:
            differ.append(col)
    return ([f"column(s) {differ} differ"] if differ else []), timing


def compare(ref: Path, new: Path) -> bool:
    """Every csv, parquet and json under ``ref/results`` against ``new/results``."""
    ref, new = ref / "results", new / "results"

    def listed(root: Path) -> set[Path]:
        return {
            p.relative_to(root) for p in root.rglob("*") if p.is_file() and p.suffix in COMPARED
        }

    ours, theirs = listed(ref), listed(new)
    same = ours == theirs
    for rel in sorted(ours ^ theirs):
        print(f"ONLY {'ref' if rel in ours else 'new'}: {rel}")
    counts = {"byte-equal": 0, "equal but for timing": 0, "different": 0}
    for rel in sorted(ours & theirs):
        a, b = ref / rel, new / rel
        if _sha(a) == _sha(b):
            counts["byte-equal"] += 1
            continue
        if rel.suffix == ".json":
            diffs, timing = ["bytes differ"], []
        else:
            diffs, timing = _table_differences(a, b)
        if diffs:
            counts["different"] += 1
            same = False
            print(f"DIFF {rel}: {'; '.join(diffs)}")
        else:
            counts["equal but for timing"] += 1
            print(f"ok   {rel}: equal but for {', '.join(timing)}")
    print(
        f"{len(ours & theirs)} files compared: "
        + ", ".join(f"{n} {what}" for what, n in counts.items())
        + f"; {len(ours ^ theirs)} on one side only"
    )
    print("identical (timing columns aside)" if same else "NOT identical")
    return same


def against(rev: str, keep: Path | None) -> bool:
    """The tiny run with the sources of ``rev`` and with the working tree's, compared."""
    from check_training_identity import extract  # this folder is on the path of a script

    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="output-identity-"))
    base = work / "sources"
    extract(rev, base)
    run(work / "ref", base)
    run(work / "new", REPO)
    print(f"reference: {rev} ({work / 'ref'}); new: working tree ({work / 'new'})")
    return compare(work / "ref", work / "new")


def main() -> None:
    from check_training_identity import command_line, finish  # this folder is on the path

    def repo_option(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--repo", type=Path, default=REPO, help="the sources to run")

    args, parser = command_line(__doc__, repo_option)
    if args.command == "run":
        run(args.out, args.repo.resolve())
    else:
        finish(args, parser, compare, against)


if __name__ == "__main__":
    main()
