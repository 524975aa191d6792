//go:build tools

// Package tools pins the commands that `make kubernetes-setup` builds from this module
// (kube-apiserver, kube-controller-manager, kubectl and etcd) and `make kubernetes-helm` builds
// beside them (Helm, which shares their k8s.io packages), so `go mod tidy` keeps them.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "helm.sh/helm/v4/cmd/helm"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
