//go:build tools

// Package tools pins KEDA v2.21's operator and metrics adapter, which `make kubernetes-setup`
// builds from this module for the HPA scenario (tests/kubernetes/hpa_test.go). A module of its
// own: KEDA's dependencies would otherwise move the control plane's (../go.mod) and rebuild it.
// The Kubernetes staging modules are pinned to the control plane's release (v0.37.2) by replace
// lines, as in ../go.mod, so that both builds share what they compile.
package tools

import (
	_ "github.com/kedacore/keda/v2/cmd/adapter"
	_ "github.com/kedacore/keda/v2/cmd/operator"
)
