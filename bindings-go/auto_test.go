package scaleunits

import (
	"bytes"
	"context"
	"os"
	"testing"
)

// ChecksAuto: the bundled component's evaluate-json runs on the plain module when the request
// is at most BoundedRequestBytes, on the budgeted one otherwise; any other component, any
// other function and any other Checks never runs on the plain module.
func TestAutoRunsOnlyBoundedCallsWithoutChecks(t *testing.T) {
	ctx := context.Background()
	ev, err := NewBundled(ctx, WithMaxIdle(8))
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close(ctx)
	if ev.Checks() != ChecksAuto || ev.plain == nil {
		t.Fatalf("the bundled component: checks %s, plain module %v", ev.Checks(), ev.plain != nil)
	}
	idle := func() (checked, plain int) {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		return len(ev.idle[checkedKind]), len(ev.idle[plainKind])
	}
	request := referenceT01(t)
	if _, err := ev.EvaluateJSON(ctx, request); err != nil {
		t.Fatal(err)
	}
	if c, p := idle(); c != 0 || p != 1 {
		t.Fatalf("after a small evaluate-json: %d checked, %d plain idle instances, want 0 and 1", c, p)
	}
	// The same request padded past the bound, and another function: the budgeted module.
	padded := append(bytes.Repeat([]byte(" "), BoundedRequestBytes), request...)
	if _, err := ev.EvaluateJSON(ctx, padded); err != nil {
		t.Fatal(err)
	}
	if _, err := ev.DeriveJSON(ctx, request); err != nil {
		t.Fatal(err)
	}
	if c, p := idle(); c != 1 || p != 1 {
		t.Fatalf("after a large evaluate-json and a derive-json: %d checked, %d plain idle instances, want 1 and 1", c, p)
	}
	exactly := append(bytes.Repeat([]byte(" "), BoundedRequestBytes-len(request)), request...)
	if _, err := ev.EvaluateJSON(ctx, exactly); err != nil {
		t.Fatal(err)
	}
	if c, p := idle(); c != 1 || p != 1 {
		t.Fatalf("after an evaluate-json of exactly BoundedRequestBytes: %d checked, %d plain, want 1 and 1", c, p)
	}

	fixture, err := os.ReadFile("../tests/fixtures/scale_units_evaluator-wit-0.2.0.wasm")
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]struct {
		bytes []byte
		opts  []Option
		want  Checks
	}{
		"another component":         {fixture, nil, ChecksBudget},
		"ChecksBudget asked":        {component, []Option{WithChecks(ChecksBudget)}, ChecksBudget},
		"the interpreter":           {component, []Option{WithInterpreter()}, ChecksBudget},
		"ChecksWazero asked":        {component, []Option{WithChecks(ChecksWazero)}, ChecksWazero},
		"ChecksNone asked":          {component, []Option{WithChecks(ChecksNone)}, ChecksNone},
		"the bundled bytes, copied": {Component(), nil, ChecksAuto},
	} {
		t.Run(name, func(t *testing.T) {
			other, err := New(ctx, opts.bytes, opts.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close(ctx)
			if other.Checks() != opts.want || (other.plain != nil) != (opts.want == ChecksAuto) {
				t.Fatalf("checks %s, plain module %v; want %s", other.Checks(), other.plain != nil, opts.want)
			}
		})
	}
}

// The plain module and the budgeted one answer every vector's request alike (the same bytes,
// or the same error).
func TestAutoAgreesWithTheBudget(t *testing.T) {
	ctx := context.Background()
	auto := testEvaluator(t)
	budget, err := NewBundled(ctx, WithChecks(ChecksBudget))
	if err != nil {
		t.Fatal(err)
	}
	defer budget.Close(ctx)
	n := 0
	for _, v := range allVectors(t) {
		if v.Request == nil {
			continue
		}
		a, aErr := auto.EvaluateJSON(ctx, v.Request)
		b, bErr := budget.EvaluateJSON(ctx, v.Request)
		if a != b || (aErr == nil) != (bErr == nil) || (aErr != nil && aErr.Error() != bErr.Error()) {
			t.Fatalf("%s: without checks %q, %v; with the budget %q, %v", v.ID, a, aErr, b, bErr)
		}
		n++
	}
	t.Logf("%d requests", n)
}
