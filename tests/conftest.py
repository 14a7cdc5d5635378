import shutil
import sys
from pathlib import Path

import pytest

# tests/helpers: the builders and reference re-statements that test files import by name.
sys.path.insert(0, str(Path(__file__).parent / "helpers"))
# Fixtures that test files in both folders read.
from degradation_faces import face_folders  # noqa: E402, F401
from report_results import results  # noqa: E402, F401
from snakemake_run import snakemake  # noqa: E402
from workflow_trees import CUT_TARGETS, cut_config, workdir_with  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = Path(__file__).parent / "workflow"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """Tiny models on tiny batches run faster on one thread, and CI has two cores."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_run(repo_root, tmp_path_factory) -> Path:
    """One complete local run of tests/data/tiny_config.yaml, made once per test session and
    read by every test of tests/workflow/test_workflow.py (the SLURM test makes its own cut
    of the config, locally and through sbatch)."""
    workdir = tmp_path_factory.mktemp("tiny_run")
    shutil.copy(repo_root / "tests" / "data" / "tiny_config.yaml", workdir / "config.yaml")
    snakemake(repo_root, workdir, "--cores", "2", "all")
    return workdir


@pytest.fixture(scope="session")
def cut_run(repo_root, tmp_path_factory) -> Path:
    """One local run of the tiny config's cut (:func:`workflow_trees.cut_config`), made once
    per test session: the SLURM test compares its cluster run with it and the partial-rerun
    tests grow it (both files share a worker, see `SHARED_RUNS`)."""
    workdir = workdir_with(tmp_path_factory.mktemp("cut"), "run", cut_config(repo_root))
    snakemake(repo_root, workdir, "--cores", "2", *CUT_TARGETS)
    return workdir


# Files that read one session-scoped run go to one worker, so that the run is made once.
SHARED_RUNS = {"test_slurm.py": "cut_run", "test_partial_rerun.py": "cut_run"}


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown without it (-p no:xdist)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with the files of one shared run (`SHARED_RUNS`) as one unit."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedRunScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return SHARED_RUNS.get(Path(path).name, path)

    return SharedRunScheduling(config, log)


# The longest files, longest first, so that no worker is left with one of them at the end
# (the paper walk-throughs are one file each for that reason).
LONGEST_FIRST = (
    "test_paper_run_assessment.py",
    "test_slurm.py",
    "test_workflow.py",
    "test_paper_run_fairfd.py",
    "test_paper_configs.py",
)


def pytest_collection_modifyitems(items):
    """Files that run Snakemake for real (tests/workflow) go first (pytest-xdist hands out
    whole files, or the files of a shared run, in this order); the unit tests fill in around
    them. A file's tests stay together, so its module-scoped runs are made once. Every test
    under tests/workflow is marked `workflow` (or `slurm`), so `-m "not workflow and not
    slurm"` is the unit suite."""

    def rank(item) -> tuple[int, int]:
        name = item.path.name
        if name in LONGEST_FIRST:
            return (0, LONGEST_FIRST.index(name))
        return (1, 0) if item.path.is_relative_to(WORKFLOW) else (2, 0)

    for item in items:
        in_workflow = item.path.is_relative_to(WORKFLOW)
        if in_workflow and not item.get_closest_marker("slurm"):
            item.add_marker(pytest.mark.workflow)

    first: dict = {}
    for item in items:
        first[item.path] = min(first.get(item.path, (3, 0)), rank(item))
    items.sort(key=lambda item: first[item.path])  # stable: collection order within a file
