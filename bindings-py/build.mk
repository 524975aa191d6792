# Recipes of the Python package (bindings-py/), included by the root Makefile.
#   make py-setup       bindings-py/.venv from nothing; installs the package (building the
#                       component with cargo), pytest and mypy (the TypedDicts' test) into it
#   make test-py        pytest: every vector, the facade, the digest against the Rust host's;
#                       then the conformance command over tests/vectors
#   make bench-py       per-call timings (bindings-py/bench/bench.py), beside the native core's
#   make py-quickstart  the quick start of bindings-py/README.md, run exactly as written there
# The digest check uses `component-digest` from bindings-js/build.mk (the Rust host's
# `scale-units inspect`, written to target/scale-units/component.sha256).

# These recipes must not become the root Makefile's default goal: restored at the end.
PY_SAVED_DEFAULT_GOAL := $(.DEFAULT_GOAL)

PYTHON ?= python3
CARGO ?= cargo
PY_DIR := bindings-py
PY_VENV := $(PY_DIR)/.venv
PY_BIN := $(PY_VENV)/bin/python
SCALE_UNITS_TARGET ?= $(or $(CARGO_TARGET_DIR),target)
SCALE_UNITS_COMPONENT ?= $(SCALE_UNITS_TARGET)/scale-units/scale_units_evaluator.wasm
SCALE_UNITS_DIGEST_FILE ?= $(SCALE_UNITS_TARGET)/scale-units/component.sha256

.PHONY: py-setup test-py bench-py py-quickstart

## The virtual environment, then the package: reinstalled every time, so that it carries the
## component built from the current sources (the build hook runs `cargo xtask component`).
py-setup:
	test -x $(PY_VENV)/bin/pip || $(PYTHON) -m venv $(PY_VENV) \
	  || { echo "$(PYTHON) -m venv failed: install Python 3.10+ with venv (Debian: python3-venv)" >&2; exit 1; }
	$(PY_BIN) -m pip install --quiet --disable-pip-version-check ./$(PY_DIR) 'pytest>=8' 'mypy>=1.10'

## pytest exits 5 when it collects nothing; that fails here like any other non-zero status.
test-py: py-setup component-digest
	cd $(PY_DIR) && SCALE_UNITS_HOST_DIGEST="$(abspath $(SCALE_UNITS_DIGEST_FILE))" \
	  SCALE_UNITS_COMPONENT="$(abspath $(SCALE_UNITS_COMPONENT))" \
	  .venv/bin/python -m pytest -q -p no:cacheprovider tests
	$(PY_BIN) -m scale_units.conformance tests/vectors

## The native core's criterion bench first, so that the table's ratios come from the same run.
bench-py: py-setup
	$(CARGO) bench -q --locked -p scale-units-core --bench core -- --warm-up-time 1 --measurement-time 3 'native/evaluate_'
	$(PY_BIN) $(PY_DIR)/bench/bench.py --criterion $(SCALE_UNITS_TARGET)/criterion

## Runs the ```sh block after the quickstart marker of bindings-py/README.md from the root, and
## checks it printed what the README says.
py-quickstart:
	mkdir -p $(SCALE_UNITS_TARGET)
	sed -n '/<!-- quickstart:/,/^```$$/p' $(PY_DIR)/README.md | sed -n '/^```sh$$/,/^```$$/{/^```/d;p}' \
	  > $(SCALE_UNITS_TARGET)/py-quickstart.sh
	test -s $(SCALE_UNITS_TARGET)/py-quickstart.sh
	bash -euxo pipefail $(SCALE_UNITS_TARGET)/py-quickstart.sh | tee $(SCALE_UNITS_TARGET)/py-quickstart.out
	grep -qxF "scale_up 1 -> 3 ['target_tracking']" $(SCALE_UNITS_TARGET)/py-quickstart.out

.DEFAULT_GOAL := $(PY_SAVED_DEFAULT_GOAL)
