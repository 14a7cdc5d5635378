# The two commands of the README: `make demo` (the default run) and `make test`
# (everything CI runs; `make test-fast` is tests/unit alone).
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CORES  ?= all

.PHONY: demo test test-fast lint dryrun clean bench-env bytecode

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: set PYTHON=/path/to/python3.11"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -r requirements.txt
	$(BIN)/python -m pip install --no-deps -r requirements-nodeps.txt
	$(BIN)/python -m pip install --no-deps --no-build-isolation -e .
	touch $@

# Every job is a new Python process that imports fairforge: compile it once here (only what
# changed), since environments that set PYTHONDONTWRITEBYTECODE would compile it in each job.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q src

demo: bytecode
	$(BIN)/snakemake --cores $(CORES) all

# One worker per core; a test file (or the files of one shared run, tests/conftest.py's
# SHARED_RUNS) stays on one worker, so its shared runs are made once;
# files go out in the order tests/conftest.py gives (the Snakemake runs first).
test: bytecode
	$(BIN)/python -m pytest -q -ra -n auto --dist loadfile --no-loadscope-reorder --durations=25

# tests/unit alone: no Snakemake, pip or SLURM (under five minutes on two cores).
test-fast: bytecode
	$(BIN)/python -m pytest -q -ra -n auto --dist loadfile --durations=25 tests/unit

# Import layers (pyproject's [tool.importlinter]), Python lint and format, Snakemake format and lint.
lint: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check src scripts tests benchmarks
	$(BIN)/ruff format --check src scripts tests benchmarks
	$(BIN)/snakefmt --check Snakefile rules
	$(BIN)/snakemake --lint

dryrun: $(STAMP)
	$(BIN)/snakemake -n all

clean:
	rm -rf results .snakemake

# Extra packages for the comparison benchmarks (not needed by the workflow or the tests).
bench-env: $(STAMP)
	$(BIN)/python -m pip install -r requirements-bench.txt
	$(BIN)/python -m pip install --no-deps imagecorruptions-imaug==1.1.5
