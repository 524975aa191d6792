# Recipes of the Kubernetes tests (tests/kubernetes/, Go module scale-units.dev/tests/kubernetes),
# included by the root Makefile.
#   make kubernetes-setup  builds etcd, kube-apiserver, kube-controller-manager and kubectl from the
#                          pinned modules (k8s.io/kubernetes v1.37.2, staging v0.37.2, etcd
#                          v3.7.0) into target/kubernetes/bin, and copies the CRDs of cert-manager
#                          and KEDA from their modules on the Go module proxy into
#                          target/kubernetes/crds (deploy/kubernetes uses their kinds); builds the
#                          Go example controller (bindings-go/examples/controller, its own go.mod),
#                          KEDA v2.21's operator and metrics adapter (the HPA scenarios) and Helm
#                          v4, all in the control plane's module, built together
#   make kubernetes-helm   builds Helm (helm.sh/helm/v4 v4.3.2, from this module: it shares the
#                          control plane's k8s.io packages) into target/kubernetes/bin/helm, for
#                          tests/kubernetes/helm_test.go (the chart deploy/helm/scale-units)
#   make test-kubernetes   the real `scale-units serve` as webhook of that control plane:
#                          go test -count=1 ./... (the scenarios in tests/kubernetes/*_test.go)
#   make kubernetes-lint   gofmt and go vet of the module
# Debian's kubernetes-client is 1.20, outside the skew kubectl supports with a 1.37 API server
# (and its kustomize too old for deploy/kubernetes), so kubectl is built from the same module.

# These recipes must not become the root Makefile's default goal: restored at the end.
K8S_SAVED_DEFAULT_GOAL := $(.DEFAULT_GOAL)

GO ?= go
CARGO ?= cargo
K8S_DIR := tests/kubernetes
K8S_TARGET := $(abspath $(or $(CARGO_TARGET_DIR),target))
K8S_BIN := $(K8S_TARGET)/kubernetes/bin
K8S_CRDS := $(K8S_TARGET)/kubernetes/crds
K8S_CERT_MANAGER := github.com/cert-manager/cert-manager@v1.21.2
K8S_KEDA := github.com/kedacore/keda/v2@v2.21.0

.PHONY: kubernetes-setup kubernetes-helm test-kubernetes kubernetes-lint bench-webhook-kubernetes

# One `go build` of one module for every command: the control plane, KEDA and Helm share their
# k8s.io packages (KEDA and Helm at the control plane's versions; issue 39), compiled once, linked
# in parallel; the debug tables stripped (-s -w: smaller binaries, faster links; nothing reads them).
K8S_COMMANDS := k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kubectl go.etcd.io/etcd/server/v3 github.com/kedacore/keda/v2/cmd/operator \
  github.com/kedacore/keda/v2/cmd/adapter helm.sh/helm/v4/cmd/helm
# Helm names its release only with this flag (its own Makefile sets it the same way).
K8S_LDFLAGS = -s -w -X helm.sh/helm/v4/internal/version.version=$$($(GO) list -m -f '{{.Version}}' helm.sh/helm/v4)

kubernetes-setup:
	mkdir -p $(K8S_BIN) $(K8S_CRDS)
	cd $(K8S_DIR) && $(GO) build -ldflags "$(K8S_LDFLAGS)" -o $(K8S_BIN)/ $(K8S_COMMANDS)
	mv -f $(K8S_BIN)/server $(K8S_BIN)/etcd
	mv -f $(K8S_BIN)/operator $(K8S_BIN)/keda-operator
	mv -f $(K8S_BIN)/adapter $(K8S_BIN)/keda-adapter
	cd bindings-go/examples/controller && $(GO) build -ldflags "-s -w" -o $(K8S_BIN)/scale-units-controller .
	cd $(K8S_TARGET)/kubernetes && \
	  cm=$$($(GO) mod download -json $(K8S_CERT_MANAGER) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p') && \
	  keda=$$($(GO) mod download -json $(K8S_KEDA) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p') && \
	  test -n "$$cm" && test -n "$$keda" && \
	  install -m 644 $$cm/deploy/crds/cert-manager.io_*.yaml $$keda/config/crd/bases/keda.sh_*.yaml $$keda/config/crd/bases/eventing.keda.sh_*.yaml $(K8S_CRDS)/

# Helm alone (kubernetes-setup builds it with the rest).
kubernetes-helm:
	mkdir -p $(K8S_BIN)
	cd $(K8S_DIR) && $(GO) build -ldflags "$(K8S_LDFLAGS)" -o $(K8S_BIN)/helm helm.sh/helm/v4/cmd/helm

kubernetes-lint:
	test -z "$$(gofmt -l $(K8S_DIR))" || { gofmt -l $(K8S_DIR); echo "gofmt: the files above are not formatted" >&2; exit 1; }
	cd $(K8S_DIR) && $(GO) vet ./...

test-kubernetes: component kubernetes-setup kubernetes-lint cli-build
	cd $(K8S_DIR) && SCALE_UNITS_BIN=$(K8S_TARGET)/debug/scale-units SCALE_UNITS_KUBERNETES_BIN=$(K8S_BIN) \
	  SCALE_UNITS_KUBERNETES_CRDS=$(K8S_CRDS) $(GO) test -count=1 -timeout 30m ./...

## The webhook's latency as the API server measures it (its histogram
## apiserver_admission_webhook_admission_duration_seconds), with the release binary: 500 server
## dry runs of a replica change through the real API server (figures go into BENCHMARKS.md).
bench-webhook-kubernetes: component kubernetes-setup
	$(CARGO) build --release --locked -p scale-units-cli
	cd $(K8S_DIR) && SCALE_UNITS_BIN=$(K8S_TARGET)/release/scale-units SCALE_UNITS_KUBERNETES_BIN=$(K8S_BIN) \
	  SCALE_UNITS_KUBERNETES_CRDS=$(K8S_CRDS) SCALE_UNITS_LATENCY_REVIEWS=$(or $(BENCH_REVIEWS),500) \
	  $(GO) test -count=1 -timeout 30m -run '^TestWebhookLatencyAsTheAPIServerMeasuresIt$$' -v ./... | grep -E '^(webhook latency|--- |ok|FAIL)'

.DEFAULT_GOAL := $(K8S_SAVED_DEFAULT_GOAL)
