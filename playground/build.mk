# Recipes of the playground (playground/), included by the root Makefile.
#   make playground-setup  npm ci in playground/; Debian's chromium when $(CHROMIUM) is missing
#   make playground-build  the component and bindings-js (js-build), then the static site in playground/dist/
#   make playground        build, then serve it at http://localhost:$(PLAYGROUND_PORT)/
#   make test-playground   build, then the end-to-end tests in headless Chromium (screenshots in
#                          $(SCALE_UNITS_TARGET)/playground-screenshots/)

# These recipes must not become the root Makefile's default goal: restored at the end.
PG_SAVED_DEFAULT_GOAL := $(.DEFAULT_GOAL)

NPM ?= npm
NODE ?= node
PG_DIR := playground
CHROMIUM ?= /usr/bin/chromium
PLAYGROUND_PORT ?= 5180
SCALE_UNITS_TARGET ?= $(or $(CARGO_TARGET_DIR),target)

.PHONY: playground-setup playground-chromium playground-build playground test-playground

playground-setup: $(PG_DIR)/node_modules/.package-lock.json playground-chromium

$(PG_DIR)/node_modules/.package-lock.json: $(PG_DIR)/package.json $(PG_DIR)/package-lock.json
	cd $(PG_DIR) && $(NPM) ci --no-audit --no-fund
	touch $@

## Debian's chromium for playwright-core (a test tool's own browser download does not work here).
playground-chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "$(CHROMIUM) is missing: apt-get install chromium (as root), or set CHROMIUM=" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi
	@"$(CHROMIUM)" --version 2>/dev/null | head -1

playground-build: js-build $(PG_DIR)/node_modules/.package-lock.json
	cd $(PG_DIR) && $(NPM) run -s build

playground: playground-build
	cd $(PG_DIR) && $(NODE) scripts/serve.mjs dist --port $(PLAYGROUND_PORT)

test-playground: playground-build playground-setup
	cd $(PG_DIR) && CHROMIUM_PATH="$(CHROMIUM)" PLAYGROUND_SCREENSHOTS="$(abspath $(SCALE_UNITS_TARGET))/playground-screenshots" \
	  $(NODE) --test --test-reporter=spec test/unit.test.mjs test/e2e.test.mjs

.DEFAULT_GOAL := $(PG_SAVED_DEFAULT_GOAL)
