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
// asks the evaluator, and runs the gate on the decision: only a scale_up or scale_down that
// was made for the replicas just read, within the contract's bounds, becomes a patch.
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
	replicas, why := gate(&request, decision)
	return &PlanResult{Decision: decision, Replicas: replicas, Why: why}, nil
}

// gate holds a decision to what the controller read before it may change the Deployment.
func gate(request *scaleunits.Request, d *scaleunits.Decision) (*int32, string) {
	switch d.Action {
	case scaleunits.ActionScaleUp, scaleunits.ActionScaleDown:
	default:
		return nil, fmt.Sprintf("the decision is %s", d.Action)
	}
	if int64(d.CurrentReplicas) != request.CurrentReplicas {
		return nil, fmt.Sprintf("the decision was made for %d replicas, the Deployment has %d", d.CurrentReplicas, request.CurrentReplicas)
	}
	p := request.Contract.Policy
	lo, hi := valueOr(p.MinReplicas, 1), valueOr(p.MaxReplicas, 1)
	if d.DesiredReplicas < lo && !(d.DesiredReplicas == 0 && p.AllowScaleToZero != nil && *p.AllowScaleToZero) {
		return nil, fmt.Sprintf("desired %d is below min_replicas %d", d.DesiredReplicas, lo)
	}
	if d.DesiredReplicas > hi {
		return nil, fmt.Sprintf("desired %d is above max_replicas %d", d.DesiredReplicas, hi)
	}
	if (d.Action == scaleunits.ActionScaleUp) != (d.DesiredReplicas > d.CurrentReplicas) || d.DesiredReplicas == d.CurrentReplicas {
		return nil, fmt.Sprintf("%s from %d to %d is not a change in that direction", d.Action, d.CurrentReplicas, d.DesiredReplicas)
	}
	n := int32(d.DesiredReplicas)
	return &n, ""
}

func valueOr(p *uint64, v uint64) uint64 {
	if p != nil {
		return *p
	}
	return v
}
