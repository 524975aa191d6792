package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	scaleunits "scale-units.dev/go"
)

// PlanResult is what the controller will do: Replicas is nil when it must not patch.
type PlanResult struct {
	Decision *scaleunits.Decision
	Replicas *int32
	Why      string
}

// Plan builds the request from the contract, the observations and the Deployment's replicas,
// asks the evaluator, and asks the gate (WIT 0.3.0, SPEC §12) whether the change to the desired
// replicas is permitted: only a scale_up or scale_down the gate allows becomes a patch.
func Plan(ctx context.Context, ev *scaleunits.Evaluator, contract, observations []byte, current int32, lastAction string, now time.Time) (*PlanResult, error) {
	request := scaleunits.Request{CurrentReplicas: int64(current), Now: now.UTC()}
	if err := json.Unmarshal(contract, &request.Contract); err != nil {
		return nil, fmt.Errorf("the contract annotation: %w", err)
	}
	if len(observations) > 0 {
		if err := json.Unmarshal(observations, &request); err != nil {
			return nil, fmt.Errorf("the observations: %w", err)
		}
		request.CurrentReplicas, request.Now = int64(current), now.UTC()
	}
	if lastAction != "" {
		at, err := time.Parse(time.RFC3339, lastAction)
		if err != nil {
			return nil, fmt.Errorf("the %s annotation: %w", annotationLastAction, err)
		}
		request.LastActionAt = &at
	}
	call, cancel := context.WithTimeout(ctx, decisionDeadline)
	defer cancel()
	decision, err := ev.Evaluate(call, &request)
	if err != nil {
		return nil, err
	}
	if decision.Action != scaleunits.ActionScaleUp && decision.Action != scaleunits.ActionScaleDown {
		return &PlanResult{Decision: decision, Why: fmt.Sprintf("the decision is %s", decision.Action)}, nil
	}
	// The gate (SPEC §12): is the change to the desired replicas permitted for what was read?
	verdict, err := ev.Gate(call, &request, scaleunits.Change{ToReplicas: int64(decision.DesiredReplicas)})
	if err != nil {
		return nil, err
	}
	if !verdict.Allowed || verdict.Decision == nil || verdict.Decision.DecisionID != decision.DecisionID {
		return &PlanResult{Decision: decision, Why: verdict.Message}, nil
	}
	replicas := int32(verdict.ToReplicas)
	return &PlanResult{Decision: decision, Replicas: &replicas, Why: verdict.Message}, nil
}
