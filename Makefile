# Two entry points, each creating its own virtual environment on first use:
#   make demo   solve the bundled example end to end
#   make test   install everything the tests need, then run them
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test bench clean

$(BIN)/part: pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (set PYTHON=python3 to use another)"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@

demo: $(BIN)/part
	$(BIN)/part check examples/tiny.part
	$(BIN)/part solve examples/tiny.part

test: $(BIN)/part
	$(BIN)/python -m pytest -q

bench: $(BIN)/part
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/build.py
	$(BIN)/python benchmarks/kernels.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
