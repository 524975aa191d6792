# Recipes of the Go module (bindings-go/, module scale-units.dev/go), included by the root Makefile.
#   make test-go             the component check, the lints, go test ./... (every vector folder,
#                            hostile components, the registry), -race on the concurrency tests,
#                            the conformance command over tests/vectors, the example controller
#                            built and its plan (decision, then gate) tested without an API server
#   make go-component-check  `cargo xtask component` rewrites bindings-go/scale_units_evaluator.wasm;
#                            fails when it differs from the committed copy (the build is reproducible)
#   make go-lint             gofmt, go vet and staticcheck (pinned) on the module and the example
#   make bench-go            go test -bench (figures go into BENCHMARKS.md)
#   make bench-go-json       the Go rows of `make bench`'s table (bindings-go/bench, JSON)
# The digest check uses `component-digest` from bindings-js/build.mk (the Rust host's
# `scale-units inspect`, written to target/scale-units/component.sha256).

# These recipes must not become the root Makefile's default goal: restored at the end.
GO_SAVED_DEFAULT_GOAL := $(.DEFAULT_GOAL)

GO ?= go
CARGO ?= cargo
GO_DIR := bindings-go
GO_EXAMPLE := $(GO_DIR)/examples/controller
STATICCHECK_VERSION := v0.8.2
SCALE_UNITS_TARGET ?= $(or $(CARGO_TARGET_DIR),target)
SCALE_UNITS_DIGEST_FILE ?= $(SCALE_UNITS_TARGET)/scale-units/component.sha256

.PHONY: test-go go-component-check go-lint bench-go bench-go-json

go-component-check:
	$(CARGO) xtask component
	git diff --exit-code --stat -- $(GO_DIR)/scale_units_evaluator.wasm $(GO_DIR)/scale_units_evaluator.wasm.sha256 \
	  || { echo "bindings-go/scale_units_evaluator.wasm differs from a fresh build: commit the rebuilt component" >&2; exit 1; }

go-lint:
	test -z "$$(gofmt -l $(GO_DIR))" || { gofmt -l $(GO_DIR); echo "gofmt: the files above are not formatted" >&2; exit 1; }
	cd $(GO_DIR) && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	cd $(GO_EXAMPLE) && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

test-go: go-component-check component-digest go-lint
	cd $(GO_DIR) && SCALE_UNITS_HOST_DIGEST="$(abspath $(SCALE_UNITS_DIGEST_FILE))" $(GO) test -count=1 ./...
	cd $(GO_DIR) && $(GO) test -count=1 -race -run 'Pool|Registry|Hostile|Deadline|Close' .
	cd $(GO_DIR) && $(GO) run ./cmd/conformance ../tests/vectors
	cd $(GO_EXAMPLE) && $(GO) build -o /dev/null . && $(GO) test -count=1 ./...

bench-go:
	cd $(GO_DIR) && $(GO) test -run '^$$' -bench . -benchtime 2s -count 1 .

## The Go rows of `make bench`'s one table: per-call times over batches, as JSON for benches/table.py.
bench-go-json: component
	mkdir -p $(BENCH_OUT)
	cd $(GO_DIR) && $(GO) run ./bench -json $(abspath $(BENCH_OUT))/bench-go.json

.DEFAULT_GOAL := $(GO_SAVED_DEFAULT_GOAL)
