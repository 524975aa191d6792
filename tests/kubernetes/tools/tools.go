//go:build tools

// Package tools pins the commands that `make kubernetes-setup` builds from this module in one
// `go build` — kube-apiserver, kube-controller-manager, kubectl, etcd, KEDA's operator and metrics
// adapter and Helm — so that `go mod tidy` keeps them and they share the k8s.io packages, compiled
// once. KEDA's requirements are raised to the control plane's where they differ (the k8s.io
// staging modules are pinned to v0.37.2 by the replace lines of go.mod; custom-metrics-apiserver
// v1.37.0, the first that builds against k8s.io/api v0.37).
package tools

import (
	_ "github.com/kedacore/keda/v2/cmd/adapter"
	_ "github.com/kedacore/keda/v2/cmd/operator"
	_ "go.etcd.io/etcd/server/v3"
	_ "helm.sh/helm/v4/cmd/helm"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
