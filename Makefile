# The one task runner. The README and .ci/run call these recipes and nothing else.
#   make run   — set up, build the component, evaluate an example through it
#   make test  — every test: lints, the core, the vectors, the component and the host
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
CARGO ?= cargo

.PHONY: setup run test lint test-core

# Each binding keeps its recipes beside its code.
-include bindings-js/build.mk
-include bindings-py/build.mk

## Install what a fresh machine lacks (the wasm target).
setup:
	rustup target add wasm32-unknown-unknown

## Every test that CI runs.
test: setup lint test-core

## Formatting and clippy with the workspace lints (warnings are errors).
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

## The native core: unit tests, every vector below tests/vectors, properties, doctests.
test-core:
	$(CARGO) test --locked -p scale-units-core --release
