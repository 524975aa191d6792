package scaleunits

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"
)

func referenceRequest(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../examples/api-gateway/request.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Many goroutines on one Evaluator: every answer is the one decision (run with -race).
func TestPoolManyGoroutines(t *testing.T) {
	ev := testEvaluator(t)
	ctx := context.Background()
	req := referenceRequest(t)
	want, err := ev.EvaluateJSON(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				var got string
				var err error
				if (g+i)%2 == 0 {
					got, err = ev.EvaluateJSON(ctx, req)
				} else {
					var items []BatchItem
					items, err = ev.EvaluateBatchJSON(ctx, [][]byte{req, req})
					if err == nil {
						got = items[1].JSON
					}
				}
				if err != nil || got != want {
					errs <- errors.Join(err, errors.New("a different decision: "+got))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if idle := ev.Idle(); idle < 1 || idle > ev.maxIdle {
		t.Errorf("%d idle instances, want 1..=%d", idle, ev.maxIdle)
	}
}

// A deadline that passes inside a long call stops it; the instance is discarded and the
// Evaluator answers the next call.
func TestDeadlineInsideTheRealComponent(t *testing.T) {
	ev := testEvaluator(t)
	req := referenceRequest(t)
	batch := make([][]byte, 20000)
	for i := range batch {
		batch[i] = req
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	_, err := ev.EvaluateBatchJSON(ctx, batch)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a batch of 20 000 under 5 ms: %v, want context.DeadlineExceeded", err)
	}
	if _, err := ev.EvaluateJSON(context.Background(), req); err != nil {
		t.Fatalf("after a stopped call: %v", err)
	}
	// A context already done never enters the component.
	done, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	if _, err := ev.EvaluateJSON(done, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled context: %v", err)
	}
}

func TestCloseWaitsAndRefuses(t *testing.T) {
	ctx := context.Background()
	ev, err := NewBundled(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ev.EvaluateJSON(ctx, referenceRequest(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// The WIT 0.1.0 component of tests/fixtures still loads and decides; what 0.2.0 added is an
// UnsupportedError, decided before the component is entered.
func TestPreviousMinorLoads(t *testing.T) {
	ctx := context.Background()
	b, err := os.ReadFile("../tests/fixtures/scale_units_evaluator-wit-0.1.0.wasm")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := New(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close(ctx)
	if ev.Info().WITVersion != "0.1.0" || ev.Interface() != "scale-units:evaluator/evaluator@0.1.0" {
		t.Fatalf("info %+v, interface %s", ev.Info(), ev.Interface())
	}
	if ev.Digest() != "sha256:c09b500cc70a269c3629964a6d7138701afef8c011f2265927d162bdbdc72b9c" {
		t.Fatalf("digest %s", ev.Digest())
	}
	if _, err := ev.EvaluateJSON(ctx, referenceRequest(t)); err != nil {
		t.Fatal(err)
	}
	for _, call := range []func() error{
		func() error { _, err := ev.DeriveJSON(ctx, referenceRequest(t)); return err },
		func() error { _, err := ev.DiagnoseRequestJSON(ctx, []byte(`{}`)); return err },
		func() error { _, err := ev.DiagnoseContractJSON(ctx, []byte(`{}`)); return err },
	} {
		var unsupported *UnsupportedError
		if err := call(); !errors.As(err, &unsupported) || unsupported.WITVersion != "0.1.0" {
			t.Fatalf("%v, want an UnsupportedError of WIT 0.1.0", err)
		}
	}
	suite, err := LoadConformanceSuite(vectorsDir + "/reference")
	if err != nil {
		t.Fatal(err)
	}
	if r := suite.Run(ctx, ev, 0); r.Failed != 0 || r.Passed != len(suite.Vectors) {
		t.Fatalf("the 0.1.0 component on reference/: %+v", r)
	}
}

// Text that is not UTF-8 never crosses into the component (its bindings may assume UTF-8): a
// typed invalid_json, and the instance keeps serving.
func TestInvalidUTF8IsRefusedBeforeCrossing(t *testing.T) {
	ev := testEvaluator(t)
	ctx := context.Background()
	_, err := ev.EvaluateJSON(ctx, []byte("{\"contract\": \"\xff\"}"))
	var refused *Error
	if !errors.As(err, &refused) || refused.Code != CodeInvalidJSON || refused.Message != "the text is not valid UTF-8 (at byte 14)" {
		t.Fatalf("%v", err)
	}
	items, err := ev.EvaluateBatchJSON(ctx, [][]byte{referenceRequest(t), []byte("\xc3")})
	if !errors.As(err, &refused) || items != nil {
		t.Fatalf("a batch with one text that is not UTF-8: %v, %v", items, err)
	}
	if _, err := ev.EvaluateJSON(ctx, referenceRequest(t)); err != nil {
		t.Fatal(err)
	}
}

// The WIT 0.2.0 component of tests/fixtures: it derives and diagnoses, and the functions 0.3.0
// added (the gate, the scaler's reading) are UnsupportedError, decided before entering.
func TestWIT020FixtureLoads(t *testing.T) {
	ctx := context.Background()
	b, err := os.ReadFile("../tests/fixtures/scale_units_evaluator-wit-0.2.0.wasm")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := New(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close(ctx)
	if ev.Interface() != "scale-units:evaluator/evaluator@0.2.0" || ev.Info().WITVersion != "0.2.0" {
		t.Fatalf("interface %s, info %+v", ev.Interface(), ev.Info())
	}
	req := referenceRequest(t)
	if _, err := ev.DeriveJSON(ctx, req); err != nil {
		t.Fatal(err)
	}
	var unsupported *UnsupportedError
	if _, err := ev.GateJSON(ctx, req, []byte(`{"to_replicas": 5}`)); !errors.As(err, &unsupported) || unsupported.WITVersion != "0.2.0" {
		t.Fatalf("GateJSON: %v", err)
	}
	if _, err := ev.ScalerReadingJSON(ctx, req); !errors.As(err, &unsupported) {
		t.Fatalf("ScalerReadingJSON: %v", err)
	}
	suite, err := LoadConformanceSuite(vectorsDir+"/reference", vectorsDir+"/derivation")
	if err != nil {
		t.Fatal(err)
	}
	if r := suite.Run(ctx, ev, 0); r.Failed != 0 {
		t.Fatalf("the 0.2.0 component: %+v", r)
	}
}
