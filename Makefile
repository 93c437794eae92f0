# Two entry points, each creating its own virtual environment on first use:
#   make demo         install what solving needs, solve the bundled example
#   make test         install partdsl + test and solver extras, run the test suite
# Both install the tested versions pinned in constraints.txt. Also:
#   make test-fast    the fast tier for the edit loop: no subprocess runs, property tests or long solves
#   make test-latest  the suite on the newest releases pyproject.toml allows (own venv)
#   make test-large   the tests of large instances (marker `large`, minutes each)
#   make test-frameworks  exported plans read by Megatron-Core, torchtitan, DeepSpeed and torch.distributed.pipelining,
#                     and a real pipelined training step on the CPU (own venv: torch, transformers, ...)
#   make tables       the papers' tables, reproduced into docs/tables.md (over an hour)
#   make tables-quick a subset at 10 s limits, into build/tables-quick.md
#   make lock         rewrite constraints.txt from the newest releases (after test-latest passes)
#   make browser      Debian's chromium and chromedriver, for the HTML report's browser test (root)
PYTHON ?= python3.11
VENV   ?= .venv
LATEST ?= .venv-latest
FRAMEWORKS ?= .venv-frameworks
LOCK   := constraints.txt
BIN    := $(VENV)/bin
PIP    := python -m pip install --quiet --disable-pip-version-check

.PHONY: demo test test-fast test-large test-latest test-frameworks lock bench clean browser tables tables-quick

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (set PYTHON=python3 to use another)"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/$(PIP) -c $(LOCK) --upgrade pip

$(VENV)/.demo: pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/$(PIP) -c $(LOCK) -e .
	@touch $@

$(VENV)/.test: pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/$(PIP) -c $(LOCK) -e '.[test]'
	@touch $@ $(VENV)/.demo

demo: $(VENV)/.demo
	$(BIN)/part check examples/tiny.part
	$(BIN)/part solve examples/tiny.part

test: $(VENV)/.test
	$(BIN)/python -m pytest -q -n auto --dist worksteal

test-fast: $(VENV)/.test
	$(BIN)/python -m pytest -q -n auto --dist worksteal -m "not slow and not large"

browser:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || \
	  apt-get install -y -q chromium chromium-driver || \
	  { apt-get update -q && apt-get install -y -q chromium chromium-driver; }

tables: $(VENV)/.test
	$(BIN)/python benchmarks/reproduce.py --jobs 2

tables-quick: $(VENV)/.test
	$(BIN)/python benchmarks/reproduce.py --quick --jobs 2

test-large: $(VENV)/.test
	$(BIN)/python -m pytest -q -m large

test-latest:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (set PYTHON=python3 to use another)"; exit 2; }
	rm -rf $(LATEST)
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/$(PIP) --upgrade pip
	$(LATEST)/bin/$(PIP) --upgrade --upgrade-strategy eager -e '.[test]'
	@$(LATEST)/bin/python -m pip freeze --exclude-editable --disable-pip-version-check \
	  | grep -iE '^(highspy|pyscipopt|pyomo|numpy|scipy|numba|lark|hypothesis|pytest|networkx|pymetis|pyscotch|mtkahypar|distributed|matplotlib|onnx|import-linter|grimp|selenium)==' | tr '\n' ' '; echo
	$(LATEST)/bin/python -m pytest -q -p no:cacheprovider -n auto --dist worksteal

# every package at its newest release but torch (conformance/requirements.txt says why)
test-frameworks:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (set PYTHON=python3 to use another)"; exit 2; }
	test -x $(FRAMEWORKS)/bin/python || $(PYTHON) -m venv $(FRAMEWORKS)
	$(FRAMEWORKS)/bin/$(PIP) --upgrade pip
	$(FRAMEWORKS)/bin/$(PIP) -e '.[test]' -r conformance/requirements.txt
	# DeepSpeed is a source package whose build imports torch: built against the torch above, no CUDA ops
	DS_BUILD_OPS=0 $(FRAMEWORKS)/bin/$(PIP) --no-build-isolation deepspeed
	# vLLM without its serving stack (its pins would replace the torch above): only its layer rule is read
	$(FRAMEWORKS)/bin/$(PIP) --no-deps vllm
	@$(FRAMEWORKS)/bin/python -m pip freeze --exclude-editable --disable-pip-version-check \
	  | grep -iE '^(torch|transformers|megatron-core|torchtitan|triton|deepspeed|vllm)==' | tr '\n' ' '; echo
	# from conformance/: the root folder on sys.path would shadow packages (Hugging Face's `kernels`) with partdsl's own
	cd conformance && ../$(FRAMEWORKS)/bin/python -m pytest -q -p no:cacheprovider .

lock:
	test -x $(LATEST)/bin/python || { echo "run make test-latest first"; exit 2; }
	{ echo "# The versions the test suite passed with (make lock: pip freeze of $(LATEST) after make test-latest)."; \
	  echo "# Python 3.11, Linux x86_64. Used as pip constraints by make demo and make test."; \
	  $(LATEST)/bin/python -m pip freeze --all --exclude-editable --disable-pip-version-check \
	    | grep -viE '^(setuptools|wheel)=='; } > $(LOCK)

bench: $(VENV)/.test
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/build.py
	$(BIN)/python benchmarks/kernels.py

clean:
	rm -rf $(VENV) $(LATEST) $(FRAMEWORKS) build *.egg-info .pytest_cache .hypothesis
