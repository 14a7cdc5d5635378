"""Where the CPU of a run goes: every Python process that a command starts (pytest and its
workers, each Snakemake process, each job's script, a SLURM job's own snakemake) records its
user + system CPU and whether it imported torch; the table sums them per script.

A job costs its imports before any work (pandas ~0.4 CPU-s, torch 1.4-1.8 with the CUDA
wheel), so the table shows where jobs, not work, fill a run. `/usr/bin/time` of the same
command misses the SLURM jobs (slurmd's children); this does not.

    .venv/bin/python benchmarks/bench_job_cpu.py pytest -p no:xdist tests/workflow/test_paper_run_benchmark.py
    .venv/bin/python benchmarks/bench_job_cpu.py snakemake --cores 2 all

The command runs as ``python -m COMMAND ...`` with a ``sitecustomize`` put first on
PYTHONPATH (one that the environment has of its own is shadowed for the run). A process
that ends without running its exit handlers (``os._exit``, a kill) is not counted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

# Written into the run's PYTHONPATH: each process appends one line at exit.
RECORDER = """
import atexit, os, resource, sys


def _record():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    argv = sys.argv or [""]
    name = os.path.basename(argv[0]) or "-c"
    if ".snakemake/scripts/" in argv[0]:
        name = name.split(".", 1)[1]  # tmpXXXX.predict.py -> predict.py
    elif "snakemake" in " ".join(argv[:3]):
        name = "snakemake"
    elif name == "__main__.py":  # python -m MODULE
        name = os.path.basename(os.path.dirname(argv[0]))
    with open(os.environ["FAIRFORGE_CPU_LOG"], "a") as log:
        log.write(f"{name}\\t{int('torch' in sys.modules)}\\t"
                  f"{usage.ru_utime + usage.ru_stime:.3f}\\n")


atexit.register(_record)
"""


def per_script(lines: list[str]) -> dict[str, list[float]]:
    """{script: [processes, CPU seconds, processes that imported torch]}."""
    table: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0])
    for line in lines:
        name, torch, cpu = line.rstrip("\n").split("\t")
        row = table[name]
        row[0] += 1
        row[1] += float(cpu)
        row[2] += int(torch)
    return dict(table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=25, help="rows to print (default 25)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="module and its arguments")
    args = parser.parse_args()
    if not args.command:
        parser.error("name a command, e.g. pytest tests/workflow/test_plan.py")
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "sitecustomize.py").write_text(RECORDER)
        log = Path(tmp, "cpu.log")
        log.touch()
        paths = [tmp, os.environ.get("PYTHONPATH", "")]
        env = dict(os.environ, FAIRFORGE_CPU_LOG=str(log), PYTHONPATH=os.pathsep.join(paths))
        code = subprocess.call([sys.executable, "-m", *args.command], env=env)
        table = per_script(log.read_text().splitlines())
    total = sum(row[1] for row in table.values())
    print(f"\n{sum(r[0] for r in table.values())} processes, {total:.0f} CPU-s (user + system)")
    print(f"{'script':<34}{'processes':>10}{'CPU-s':>9}{'each':>7}{'torch':>7}")
    for name, (n, cpu, torch) in sorted(table.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"{name:<34}{n:>10}{cpu:>9.1f}{cpu / n:>7.2f}{torch:>7}")
    return code


if __name__ == "__main__":
    sys.exit(main())
