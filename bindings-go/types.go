package scaleunits

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// The request and contract of SPEC §4-§6 as Go types. An optional field whose default is not
// Go's zero value is a pointer (nil: omitted, so the SPEC's default applies); a list that may
// be omitted is left out when nil and sent as [] when empty. Times are time.Time and are sent
// as RFC 3339 text; the evaluator requires an offset and a UTC year in 2000..=2300.

// Ptr returns a pointer to v, for the optional fields.
func Ptr[T any](v T) *T { return &v }

// Request is an evaluation request (SPEC §6).
type Request struct {
	Contract        Contract               `json:"contract"`
	CurrentReplicas int64                  `json:"current_replicas"`
	Signal          *SignalObservation     `json:"signal,omitempty"`
	Capacities      []CapacityObservation  `json:"capacities,omitzero"`
	Quotas          []QuotaObservation     `json:"quotas,omitzero"`
	Continuity      *ContinuityObservation `json:"continuity,omitempty"`
	Safety          *SafetyObservation     `json:"safety,omitempty"`
	Now             time.Time              `json:"now"`
	LastActionAt    *time.Time             `json:"last_action_at,omitempty"`
}

// MarshalJSON writes the request as the evaluator reads it. Go writes a time.Time with up to
// nine fractional digits, and SPEC's time syntax takes at most six (times are compared at
// microsecond resolution): every time of the request is written truncated to the microsecond,
// so time.Now() can be given as it is. The request itself is not changed.
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request // the same fields, without this method
	out := plain(r)
	out.Now = microseconds(r.Now)
	if r.LastActionAt != nil {
		at := microseconds(*r.LastActionAt)
		out.LastActionAt = &at
	}
	if r.Signal != nil {
		signal := *r.Signal
		signal.Observed = signal.Observed.microseconds()
		out.Signal = &signal
	}
	if r.Capacities != nil {
		out.Capacities = make([]CapacityObservation, len(r.Capacities))
		for i, capacity := range r.Capacities {
			capacity.Observed = capacity.Observed.microseconds()
			out.Capacities[i] = capacity
		}
	}
	if r.Quotas != nil {
		out.Quotas = make([]QuotaObservation, len(r.Quotas))
		for i, quota := range r.Quotas {
			quota.Observed = quota.Observed.microseconds()
			out.Quotas[i] = quota
		}
	}
	if r.Continuity != nil {
		continuity := *r.Continuity
		continuity.Observed = continuity.Observed.microseconds()
		out.Continuity = &continuity
	}
	if r.Safety != nil {
		safety := *r.Safety
		safety.Observed = safety.Observed.microseconds()
		out.Safety = &safety
	}
	return json.Marshal(out)
}

// microseconds is t at SPEC's resolution (and without Go's monotonic clock reading).
func microseconds(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

func (o Observed) microseconds() Observed {
	o.ObservedAt, o.ExpiresAt = microseconds(o.ObservedAt), microseconds(o.ExpiresAt)
	return o
}

// Contract is a scale unit's contract (SPEC §4.3).
type Contract struct {
	SchemaVersion        string             `json:"schema_version,omitempty"`
	UnitRef              string             `json:"unit_ref"`
	Surface              SurfaceKind        `json:"surface"`
	Version              *uint64            `json:"version,omitempty"`
	Policy               Policy             `json:"policy"`
	AllowedSignals       []SignalKind       `json:"allowed_signals"`
	RequiredCapacityAxes []CapacityAxis     `json:"required_capacity_axes"`
	ReplicaDemands       []CapacityDemand   `json:"replica_demands"`
	Quotas               []QuotaBinding     `json:"quotas,omitzero"`
	PartitionLease       *PartitionLease    `json:"partition_lease,omitempty"`
	Continuity           ContinuityContract `json:"continuity"`
	SafetyRequired       *bool              `json:"safety_required,omitempty"`
	EngineAuthorityAxes  []CapacityAxis     `json:"engine_authority_axes,omitzero"`
	ContractID           string             `json:"contract_id,omitempty"`
	ContractDigest       string             `json:"contract_digest,omitempty"`
}

// Policy is a contract's scale policy (SPEC §4.1); nil fields take the SPEC's defaults.
type Policy struct {
	MinReplicas        *uint64    `json:"min_replicas,omitempty"`
	MaxReplicas        *uint64    `json:"max_replicas,omitempty"`
	Target             uint64     `json:"target"`
	TargetSignal       SignalKind `json:"target_signal"`
	ScaleUpStep        *uint64    `json:"scale_up_step,omitempty"`
	ScaleDownStep      *uint64    `json:"scale_down_step,omitempty"`
	ScaleUpCooldownS   *uint64    `json:"scale_up_cooldown_s,omitempty"`
	ScaleDownCooldownS *uint64    `json:"scale_down_cooldown_s,omitempty"`
	DrainSeconds       *uint64    `json:"drain_seconds,omitempty"`
	AllowScaleToZero   *bool      `json:"allow_scale_to_zero,omitempty"`
	AllowScaleFromZero *bool      `json:"allow_scale_from_zero,omitempty"`
}

// CapacityDemand is what one replica needs on an axis (SPEC §4.2).
type CapacityDemand struct {
	Axis       CapacityAxis `json:"axis"`
	PerReplica uint64       `json:"per_replica"`
}

// QuotaBinding binds a quota to the contract (SPEC §4.2).
type QuotaBinding struct {
	QuotaRef       string       `json:"quota_ref"`
	Axis           CapacityAxis `json:"axis"`
	Scope          QuotaScope   `json:"scope"`
	PerReplica     uint64       `json:"per_replica"`
	Multiplicative *bool        `json:"multiplicative,omitempty"`
}

// PartitionLease is the partition and lease part of a contract (SPEC §4.2).
type PartitionLease struct {
	Partitioned          *bool   `json:"partitioned,omitempty"`
	PartitionsPerReplica *uint64 `json:"partitions_per_replica,omitempty"`
	LeaseRequired        *bool   `json:"lease_required,omitempty"`
	LeaseTTLS            *uint64 `json:"lease_ttl_s,omitempty"`
	FencingRequired      *bool   `json:"fencing_required,omitempty"`
}

// ContinuityContract is the continuity part of a contract (SPEC §4.2).
type ContinuityContract struct {
	Mode                     ContinuityMode `json:"mode"`
	ExternalStoreRef         *string        `json:"external_store_ref,omitempty"`
	DrainRequired            *bool          `json:"drain_required,omitempty"`
	BlockScaleDownWithActive *bool          `json:"block_scale_down_with_active,omitempty"`
	MaxDrainSeconds          *uint64        `json:"max_drain_seconds,omitempty"`
}

// Observed is what every observation carries: its window and its source (SPEC §5).
type Observed struct {
	ObservedAt   time.Time `json:"observed_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	SourceRef    string    `json:"source_ref"`
	SourceDigest string    `json:"source_digest"`
}

// SignalObservation is the observed scaling signal.
type SignalObservation struct {
	Signal SignalKind `json:"signal"`
	Value  int64      `json:"value"`
	Observed
}

// CapacityObservation is one capacity axis as observed.
type CapacityObservation struct {
	Axis        CapacityAxis `json:"axis"`
	Allocatable uint64       `json:"allocatable"`
	Reserved    uint64       `json:"reserved"`
	Used        uint64       `json:"used"`
	Observed
}

// QuotaObservation is one quota as observed.
type QuotaObservation struct {
	QuotaRef string     `json:"quota_ref"`
	Scope    QuotaScope `json:"scope"`
	Limit    uint64     `json:"limit"`
	Used     uint64     `json:"used"`
	Observed
}

// ContinuityObservation is the observed session state.
type ContinuityObservation struct {
	Ready          bool   `json:"ready"`
	ActiveSessions uint64 `json:"active_sessions"`
	ActiveStreams  uint64 `json:"active_streams"`
	Observed
}

// SafetyObservation is the observed overload and noisy-neighbor state.
type SafetyObservation struct {
	Overloaded    bool    `json:"overloaded"`
	NoisyNeighbor bool    `json:"noisy_neighbor"`
	ReasonRef     *string `json:"reason_ref,omitempty"`
	Observed
}

// Decision is the evaluator's decision (SPEC §9).
type Decision struct {
	SchemaVersion   string     `json:"schema_version"`
	DecisionID      string     `json:"decision_id"`
	DecisionDigest  string     `json:"decision_digest"`
	ContractID      string     `json:"contract_id"`
	EvaluatedAt     time.Time  `json:"evaluated_at"`
	CurrentReplicas uint64     `json:"current_replicas"`
	DesiredReplicas uint64     `json:"desired_replicas"`
	Action          Action     `json:"action"`
	Reasons         []Reason   `json:"reasons"`
	DrainRequired   bool       `json:"drain_required"`
	Evidence        []Evidence `json:"evidence"`
}

// Evidence is one evidence entry of a decision.
type Evidence struct {
	Kind   EvidenceKind   `json:"kind"`
	Ref    string         `json:"ref"`
	Digest string         `json:"digest"`
	Status EvidenceStatus `json:"status"`
	Code   string         `json:"code"`
}

// Derivation is the arithmetic behind one decision (DECISIONS.md, "Derivations"). Every key is
// always present; nil pointers are JSON null.
type Derivation struct {
	DecisionID      string            `json:"decision_id"`
	DecisionDigest  string            `json:"decision_digest"`
	ContractID      string            `json:"contract_id"`
	EvaluatedAt     time.Time         `json:"evaluated_at"`
	CurrentReplicas uint64            `json:"current_replicas"`
	Evidence        []EvidenceVerdict `json:"evidence"`
	Checks          []Step            `json:"checks"`
	Target          *TargetStep       `json:"target"`
	Gates           []Step            `json:"gates"`
	Action          Action            `json:"action"`
	DesiredReplicas uint64            `json:"desired_replicas"`
	Reasons         []Reason          `json:"reasons"`
	DrainRequired   bool              `json:"drain_required"`
}

// EvidenceVerdict is the derivation of one evidence entry, with the observation's window.
type EvidenceVerdict struct {
	Kind       EvidenceKind   `json:"kind"`
	Ref        string         `json:"ref"`
	Status     EvidenceStatus `json:"status"`
	Code       string         `json:"code"`
	ObservedAt *time.Time     `json:"observed_at"`
	ExpiresAt  *time.Time     `json:"expires_at"`
	Mismatch   *Mismatch      `json:"mismatch"`
}

// Mismatch is what was expected and what was found (a signal or a quota scope).
type Mismatch struct {
	Expected string `json:"expected"`
	Found    string `json:"found"`
}

// TargetStep is phase B of the derivation: the target arithmetic.
type TargetStep struct {
	Signal      SignalKind `json:"signal"`
	Value       int64      `json:"value"`
	Target      uint64     `json:"target"`
	Ceil        uint64     `json:"ceil"`
	MinReplicas uint64     `json:"min_replicas"`
	Floor       uint64     `json:"floor"`
	MaxReplicas uint64     `json:"max_replicas"`
	Clamp       *string    `json:"clamp"`
	Raw         uint64     `json:"raw"`
	Action      Action     `json:"action"`
	Step        *StepCap   `json:"step"`
	Desired     uint64     `json:"desired"`
}

// StepCap is the step that capped (or not) the target.
type StepCap struct {
	Name   string `json:"name"`
	Size   uint64 `json:"size"`
	Limit  uint64 `json:"limit"`
	Capped bool   `json:"capped"`
}

// Step is one check (phase A) or gate (phase C) of a derivation: tagged by Kind ("check" or
// "gate" member), Fired for gates, and its whole JSON object in Raw (the fields of each kind
// are listed in DECISIONS.md, "Derivations"; json.Unmarshal(step.Raw, &yourStruct) reads them).
type Step struct {
	Kind  string
	Fired bool
	Raw   json.RawMessage
}

// UnmarshalJSON keeps the object and reads its tag.
func (s *Step) UnmarshalJSON(b []byte) error {
	var head struct {
		Check *string `json:"check"`
		Gate  *string `json:"gate"`
		Fired bool    `json:"fired"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	switch {
	case head.Check != nil:
		s.Kind = *head.Check
	case head.Gate != nil:
		s.Kind = *head.Gate
	default:
		return fmt.Errorf("scaleunits: a derivation step without a check or gate tag")
	}
	s.Fired = head.Fired
	s.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes the object as it was read.
func (s Step) MarshalJSON() ([]byte, error) {
	if len(s.Raw) == 0 {
		return []byte("null"), nil
	}
	return s.Raw, nil
}

// Evaluate evaluates a typed request: it is sent as JSON (EvaluateJSON) and the decision read
// back into a Decision. A request the evaluator refuses is an *Error.
//
// The request is written and the decision read by this module's own JSON code (codec.go), which
// gives what encoding/json gives and leaves to it anything else.
func (e *Evaluator) Evaluate(ctx context.Context, request *Request) (*Decision, error) {
	buf := requestBuffers.Get().(*[]byte)
	text, err := appendRequestJSON((*buf)[:0], request)
	if err != nil {
		requestBuffers.Put(buf)
		return nil, err
	}
	out, err := e.EvaluateJSON(ctx, text) // the text is copied into the guest: buf is free after
	if cap(text) <= maxPooledRequest {
		*buf = text[:0]
		requestBuffers.Put(buf)
	}
	if err != nil {
		return nil, err
	}
	var d Decision
	if !readDecision(out, &d) {
		d = Decision{}
		if err := decodeGuestJSON("evaluate-json", out, &d); err != nil {
			return nil, err
		}
	}
	return &d, nil
}

// marshalRequest writes a request as json.Marshal does (appendRequest, or json.Marshal itself
// for what appendRequest leaves to it).
func marshalRequest(r *Request) ([]byte, error) { return appendRequestJSON(nil, r) }

func appendRequestJSON(b []byte, r *Request) ([]byte, error) {
	if r != nil {
		if out, ok := appendRequest(b, r); ok {
			return out, nil
		}
	}
	return json.Marshal(r)
}

// requestBuffers keeps the buffers Evaluate writes requests into; one larger than
// maxPooledRequest is left to the garbage collector.
var requestBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

const maxPooledRequest = 64 << 10

// Derive returns the typed derivation of a typed request's decision.
func (e *Evaluator) Derive(ctx context.Context, request *Request) (*Derivation, error) {
	text, err := marshalRequest(request)
	if err != nil {
		return nil, err
	}
	out, err := e.DeriveJSON(ctx, text)
	if err != nil {
		return nil, err
	}
	var d Derivation
	if err := decodeGuestJSON("derive-json", out, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// ValidateContract validates a typed contract and returns its identity.
func (e *Evaluator) ValidateContract(ctx context.Context, contract *Contract) (*ContractIdentity, error) {
	text, err := json.Marshal(contract)
	if err != nil {
		return nil, err
	}
	return e.ValidateContractJSON(ctx, text)
}

// decodeGuestJSON reads JSON text the component wrote: text it should never write is a
// *GuestError, not a panic.
func decodeGuestJSON(function, text string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &GuestError{Function: function, Message: "the component returned JSON this module cannot read", Err: err}
	}
	return nil
}
