package scaleunits

import (
	"context"
	_ "embed"
	"strings"
)

// The component this module carries: byte for byte the one `cargo xtask component` builds
// (`make go-component-check` compares them), with its digest beside it.
//
//go:embed scale_units_evaluator.wasm
var component []byte

//go:embed scale_units_evaluator.wasm.sha256
var componentDigest string

// Component returns a copy of the bytes of the component this module carries.
func Component() []byte { return append([]byte(nil), component...) }

// ComponentDigest returns the digest the module was built with for its component.
func ComponentDigest() string { return strings.TrimSpace(componentDigest) }

// NewBundled loads the component this module carries, verifying its sha256 against the digest
// recorded beside it.
func NewBundled(ctx context.Context, opts ...Option) (*Evaluator, error) {
	return New(ctx, component, append([]Option{WithExpectedDigest(ComponentDigest())}, opts...)...)
}
