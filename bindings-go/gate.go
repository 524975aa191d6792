package scaleunits

import (
	"context"
	"encoding/json"
)

// ChangeKind is how a proposed change is made (SPEC §12.1).
type ChangeKind string

// The ChangeKind values.
const (
	// ChangeScale is an ordinary change (the default).
	ChangeScale ChangeKind = "scale"
	// ChangeBreakGlass is a change the gate's own identity policy already authorised as an
	// override of a denial.
	ChangeBreakGlass ChangeKind = "break_glass"
)

// String returns the JSON spelling.
func (k ChangeKind) String() string { return string(k) }

// Change is a proposed change of a unit's replicas, from the request's current_replicas.
type Change struct {
	ToReplicas int64      `json:"to_replicas"`
	Kind       ChangeKind `json:"kind,omitempty"`
}

// GateReason is why the gate allows or denies a change (SPEC §12.1).
type GateReason string

// The GateReason values.
const (
	GateNoChange          GateReason = "no_change"
	GateWithinDecision    GateReason = "within_decision"
	GateDecisionBlocked   GateReason = "decision_blocked"
	GateDecisionHold      GateReason = "decision_hold"
	GateWrongDirection    GateReason = "wrong_direction"
	GatePastDesired       GateReason = "past_desired"
	GateRecoveryTowardMax GateReason = "recovery_toward_max"
	GateRequestInvalid    GateReason = "request_invalid"
	GateRecoveryTowardMin GateReason = "recovery_toward_min"
	GateAwayFromBounds    GateReason = "away_from_bounds"
	GatePastBound         GateReason = "past_bound"
	GateBreakGlass        GateReason = "break_glass"
)

// String returns the JSON spelling.
func (r GateReason) String() string { return string(r) }

// Verdict is what the gate says about a change (SPEC §12.1). FromReplicas is nil only when the
// request cannot be evaluated; Decision is nil then, and Error says why.
type Verdict struct {
	Allowed      bool       `json:"allowed"`
	Reason       GateReason `json:"reason"`
	Message      string     `json:"message"`
	FromReplicas *uint64    `json:"from_replicas"`
	ToReplicas   uint64     `json:"to_replicas"`
	Decision     *Decision  `json:"decision"`
	Error        *Error     `json:"error"`
}

// ScalerReading is what an external scaler reports for a request (SPEC §12.2): MetricValue is
// nil when the request cannot be evaluated (Active is then true: missing knowledge never scales
// a unit to zero).
type ScalerReading struct {
	MetricValue *uint64   `json:"metric_value"`
	Active      bool      `json:"active"`
	Decision    *Decision `json:"decision"`
	Error       *Error    `json:"error"`
}

// Gate asks whether a change is permitted for a typed request (WIT 0.3.0, gate-json). A request
// that cannot be evaluated is a denial (a Verdict), not an error; a change that cannot be read
// is an *Error. UnsupportedError on a component before 0.3.
func (e *Evaluator) Gate(ctx context.Context, request *Request, change Change) (*Verdict, error) {
	req, err := marshalRequest(request)
	if err != nil {
		return nil, err
	}
	ch, err := json.Marshal(change)
	if err != nil {
		return nil, err
	}
	out, err := e.GateJSON(ctx, req, ch)
	if err != nil {
		return nil, err
	}
	var v Verdict
	if err := decodeGuestJSON("gate-json", out, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// ScalerReading returns the external scaler's reading of a typed request (WIT 0.3.0).
func (e *Evaluator) ScalerReading(ctx context.Context, request *Request) (*ScalerReading, error) {
	req, err := marshalRequest(request)
	if err != nil {
		return nil, err
	}
	out, err := e.ScalerReadingJSON(ctx, req)
	if err != nil {
		return nil, err
	}
	var r ScalerReading
	if err := decodeGuestJSON("scaler-reading-json", out, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
