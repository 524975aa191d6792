package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	scaleunits "scale-units.dev/go"
)

// The example request of the repository split as the controller reads it: the contract from
// an annotation, the observations from a ConfigMap, the replicas from the Deployment.
func TestPlanPatchesOnlyWhatTheGateAllows(t *testing.T) {
	ctx := context.Background()
	ev, err := scaleunits.NewBundled(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close(ctx)
	text, err := os.ReadFile("../../../examples/api-gateway/request.json")
	if err != nil {
		t.Fatal(err)
	}
	var parts map[string]json.RawMessage
	if err := json.Unmarshal(text, &parts); err != nil {
		t.Fatal(err)
	}
	contract := parts["contract"]
	delete(parts, "contract")
	observations, _ := json.Marshal(parts)
	now := time.Date(2026, 8, 19, 12, 0, 0, 0, time.UTC)

	plan, err := Plan(ctx, ev, contract, observations, 3, "2026-08-19T11:50:00Z", now)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Replicas == nil || *plan.Replicas != 5 {
		t.Fatalf("3 replicas at 640 in flight: %+v", plan)
	}
	// Within the scale-up cooldown (60 s): a hold, no patch.
	plan, err = Plan(ctx, ev, contract, observations, 3, "2026-08-19T11:59:30Z", now)
	if err != nil || plan.Replicas != nil || plan.Decision.Action != scaleunits.ActionHold {
		t.Fatalf("inside the cooldown: %+v, %v", plan, err)
	}
	// Observations read after they expired: blocked, no patch.
	plan, err = Plan(ctx, ev, contract, observations, 3, "", now.Add(time.Hour))
	if err != nil || plan.Replicas != nil || plan.Decision.Action != scaleunits.ActionBlocked {
		t.Fatalf("stale observations: %+v, %v", plan, err)
	}
	// Replicas the contract forbids: the evaluator refuses the request.
	if _, err := Plan(ctx, ev, contract, observations, 1, "", now); err == nil {
		t.Fatal("1 replica under min_replicas 2 was accepted")
	}
}
