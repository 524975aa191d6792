package scaleunits_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	scaleunits "scale-units.dev/go"
)

// Evaluate a request given as JSON text, as the other faces and the CLI read it.
func ExampleEvaluator_EvaluateJSON() {
	ctx := context.Background()
	ev, err := scaleunits.NewBundled(ctx)
	if err != nil {
		panic(err)
	}
	defer ev.Close(ctx)
	request, err := os.ReadFile("../examples/api-gateway/request.json")
	if err != nil {
		panic(err)
	}
	decision, err := ev.EvaluateJSON(ctx, request)
	if err != nil {
		panic(err)
	}
	var d scaleunits.Decision
	if err := json.Unmarshal([]byte(decision), &d); err != nil {
		panic(err)
	}
	fmt.Println(d.Action, d.CurrentReplicas, "->", d.DesiredReplicas, d.DecisionID)
	// Output: scale_up 3 -> 5 scale-decision:561bc356681f25351aff506f0bee02dd
}

// Evaluate a request built from Go types.
func ExampleEvaluator_Evaluate() {
	ctx := context.Background()
	ev, err := scaleunits.NewBundled(ctx)
	if err != nil {
		panic(err)
	}
	defer ev.Close(ctx)
	now := time.Date(2026, 8, 19, 12, 0, 0, 0, time.UTC)
	window := scaleunits.Observed{ObservedAt: now.Add(-30 * time.Second), ExpiresAt: now.Add(90 * time.Second)}
	capacity := func(axis scaleunits.CapacityAxis, allocatable, reserved uint64, ref string) scaleunits.CapacityObservation {
		w := window
		w.SourceRef, w.SourceDigest = ref, scaleunits.DigestOf([]byte(ref))
		return scaleunits.CapacityObservation{Axis: axis, Allocatable: allocatable, Reserved: reserved, Observed: w}
	}
	signal := window
	signal.SourceRef, signal.SourceDigest = "metrics:gateway/in-flight", scaleunits.DigestOf([]byte("in-flight"))
	safety := window
	safety.SourceRef, safety.SourceDigest = "safety:gateway/load-shedder", scaleunits.DigestOf([]byte("shedder"))
	request := &scaleunits.Request{
		Contract: scaleunits.Contract{
			UnitRef: "unit:gateway",
			Surface: scaleunits.SurfaceAPIGateway,
			Policy: scaleunits.Policy{
				MinReplicas: scaleunits.Ptr[uint64](2), MaxReplicas: scaleunits.Ptr[uint64](12),
				Target: 100, TargetSignal: scaleunits.SignalInFlight, ScaleUpStep: scaleunits.Ptr[uint64](2),
			},
			AllowedSignals:       []scaleunits.SignalKind{scaleunits.SignalInFlight},
			RequiredCapacityAxes: []scaleunits.CapacityAxis{scaleunits.AxisCPUMilli, scaleunits.AxisMemoryMiB, scaleunits.AxisSessionSlots},
			ReplicaDemands: []scaleunits.CapacityDemand{
				{Axis: scaleunits.AxisCPUMilli, PerReplica: 1000},
				{Axis: scaleunits.AxisMemoryMiB, PerReplica: 2048},
				{Axis: scaleunits.AxisSessionSlots, PerReplica: 200},
			},
			Continuity: scaleunits.ContinuityContract{Mode: scaleunits.ContinuityStateless, BlockScaleDownWithActive: scaleunits.Ptr(false)},
		},
		CurrentReplicas: 3,
		Signal:          &scaleunits.SignalObservation{Signal: scaleunits.SignalInFlight, Value: 640, Observed: signal},
		Capacities: []scaleunits.CapacityObservation{
			capacity(scaleunits.AxisCPUMilli, 16000, 3000, "capacity:cluster/cpu"),
			capacity(scaleunits.AxisMemoryMiB, 65536, 6144, "capacity:cluster/memory"),
			capacity(scaleunits.AxisSessionSlots, 4000, 700, "capacity:gateway/slots"),
		},
		Safety: &scaleunits.SafetyObservation{Observed: safety},
		Now:    now,
	}
	decision, err := ev.Evaluate(ctx, request)
	if err != nil {
		panic(err)
	}
	fmt.Println(decision.Action, decision.CurrentReplicas, "->", decision.DesiredReplicas, decision.Reasons)
	// Output: scale_up 3 -> 5 [target_tracking]
}

// A request the evaluator refuses is an *Error with the SPEC's code, message and path.
func ExampleError() {
	ctx := context.Background()
	ev, err := scaleunits.NewBundled(ctx)
	if err != nil {
		panic(err)
	}
	defer ev.Close(ctx)
	_, err = ev.EvaluateJSON(ctx, []byte(`{"contract": {}, "current_replicas": 1, "now": "2026-08-19T12:00:00"}`))
	var refused *scaleunits.Error
	if errors.As(err, &refused) {
		fmt.Println(refused.Code, refused.Path)
	}
	// Output: invalid_field contract.unit_ref
}

// A deadline bounds a call: the instance that was stopped is discarded, and the Evaluator
// keeps serving with a fresh one.
func ExampleWithMemoryLimitPages() {
	ctx := context.Background()
	ev, err := scaleunits.NewBundled(ctx, scaleunits.WithMemoryLimitPages(256), scaleunits.WithMaxIdle(4))
	if err != nil {
		panic(err)
	}
	defer ev.Close(ctx)
	call, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	d, err := ev.DiagnoseContractJSON(call, []byte(`{"surface": "api-gateway"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Faults[0].Code, d.Faults[0].Path)
	// Output: invalid_field unit_ref
}

// Stage a component, pass the conformance gate, activate it, evaluate on it.
func ExampleRegistry() {
	ctx := context.Background()
	suite, err := scaleunits.LoadConformanceSuite("../tests/vectors/reference")
	if err != nil {
		panic(err)
	}
	registry := scaleunits.NewRegistry(suite)
	defer registry.Close(ctx)
	staged, err := registry.Stage(ctx, scaleunits.Candidate{Bytes: scaleunits.Component(), ExpectedDigest: scaleunits.ComponentDigest()})
	if err != nil {
		panic(err)
	}
	if _, err := registry.Activate(staged.Digest); err != nil {
		panic(err)
	}
	request, _ := os.ReadFile("../examples/api-gateway/request.json")
	_, digest, err := registry.EvaluateJSON(ctx, request)
	fmt.Println(staged.VectorsPassed, digest == scaleunits.ComponentDigest(), err)
	// Output: 12 true <nil>
}
