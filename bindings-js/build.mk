# Recipes of the JavaScript package (bindings-js/), included by the root Makefile.
#   make js-setup       npm ci in bindings-js (the lock file is committed)
#   make js-build       build the component, transpile it with jco into bindings-js/generated/
#   make test-js        node --test: every vector, the facade, the digest against the Rust host's
#   make bench-js       per-call timings (bindings-js/bench/bench.mjs)
#   make js-quickstart  the quick start of bindings-js/README.md, run exactly as written there
#   make component-digest  the Rust host's digest of the component, for the digest check

# These recipes must not become the root Makefile's default goal: restored at the end.
JS_SAVED_DEFAULT_GOAL := $(.DEFAULT_GOAL)

CARGO ?= cargo
NPM ?= npm
NODE ?= node
JS_DIR := bindings-js
SCALE_UNITS_TARGET ?= $(or $(CARGO_TARGET_DIR),target)
SCALE_UNITS_COMPONENT ?= $(SCALE_UNITS_TARGET)/scale-units/scale_units_evaluator.wasm
SCALE_UNITS_DIGEST_FILE ?= $(SCALE_UNITS_TARGET)/scale-units/component.sha256

.PHONY: js-setup js-build test-js bench-js js-quickstart component-digest

js-setup: $(JS_DIR)/node_modules/.package-lock.json

$(JS_DIR)/node_modules/.package-lock.json: $(JS_DIR)/package.json $(JS_DIR)/package-lock.json
	cd $(JS_DIR) && $(NPM) ci --no-audit --no-fund
	touch $@

js-build: js-setup
	$(CARGO) xtask component
	cd $(JS_DIR) && SCALE_UNITS_COMPONENT="$(abspath $(SCALE_UNITS_COMPONENT))" $(NODE) scripts/build.mjs

## The digest the Rust host reports for the component: the `digest` line of `scale-units inspect`,
## written as one line `sha256:<hex>` (the JS and Python digest checks read it).
component-digest:
	$(CARGO) xtask component
	digest="$$($(CARGO) run -q --locked -p scale-units-cli --bin scale-units -- inspect $(SCALE_UNITS_COMPONENT) | sed -nE 's/^digest +(sha256:[0-9a-f]{64})$$/\1/p')"; \
	  test -n "$$digest"; echo "$$digest" > $(SCALE_UNITS_DIGEST_FILE)

test-js: js-build component-digest
	cd $(JS_DIR) && SCALE_UNITS_COMPONENT="$(abspath $(SCALE_UNITS_COMPONENT))" \
	  SCALE_UNITS_HOST_DIGEST="$(abspath $(SCALE_UNITS_DIGEST_FILE))" $(NODE) --test test/
	$(NODE) $(JS_DIR)/bin/conformance.mjs tests/vectors

## Node timings with, from the same run, the native core's criterion medians for the ratio column.
bench-js: js-build
	$(CARGO) bench -q --locked -p scale-units-core --bench core -- --warm-up-time 1 --measurement-time 3 'native/evaluate_'
	$(NODE) $(JS_DIR)/bench/bench.mjs --native $(SCALE_UNITS_TARGET)/criterion

## Runs the ```sh block between the quickstart markers of bindings-js/README.md, from the root.
js-quickstart:
	mkdir -p $(SCALE_UNITS_TARGET)
	sed -n '/<!-- quickstart:begin -->/,/<!-- quickstart:end -->/p' $(JS_DIR)/README.md \
	  | sed -n '/^```sh$$/,/^```$$/{/^```/d;p}' > $(SCALE_UNITS_TARGET)/js-quickstart.sh
	test -s $(SCALE_UNITS_TARGET)/js-quickstart.sh
	bash -euxo pipefail $(SCALE_UNITS_TARGET)/js-quickstart.sh | tee $(SCALE_UNITS_TARGET)/js-quickstart.out
	grep -qE "^scale_up 1 -> 3 \[ 'target_tracking' \] sha256:[0-9a-f]{64}$$" $(SCALE_UNITS_TARGET)/js-quickstart.out

.DEFAULT_GOAL := $(JS_SAVED_DEFAULT_GOAL)
