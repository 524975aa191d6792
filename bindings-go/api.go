package scaleunits

import (
	"context"
)

// EvaluateJSON evaluates one request given as JSON text (SPEC §6) and returns the decision's
// JSON text exactly as the component wrote it (SPEC §9). A request the evaluator refuses is an
// *Error; a call that did not complete is a *GuestError (or a context error).
func (e *Evaluator) EvaluateJSON(ctx context.Context, request []byte) (string, error) {
	kind := checkedKind
	if e.plain != nil && len(request) <= BoundedRequestBytes {
		kind = plainKind // ChecksAuto: the bundled component's work on it is bounded
	}
	var out []string
	err := e.callOn(ctx, kind, "evaluate-json", func(in *instance) (err error) {
		out, err = in.resultCall(ctx, "evaluate-json", 1, request)
		return err
	})
	if err != nil {
		return "", err
	}
	return out[0], nil
}

// DeriveJSON returns the derivation of the request's decision as JSON text (DECISIONS.md,
// "Derivations"); UnsupportedError on a WIT 0.1 component.
func (e *Evaluator) DeriveJSON(ctx context.Context, request []byte) (string, error) {
	return e.oneString(ctx, "derive-json", request)
}

func (e *Evaluator) oneString(ctx context.Context, function string, arg []byte) (string, error) {
	var out []string
	err := e.call(ctx, function, func(in *instance) (err error) {
		out, err = in.resultCall(ctx, function, 1, arg)
		return err
	})
	if err != nil {
		return "", err
	}
	return out[0], nil
}

// EvaluateBatchJSON evaluates several requests in one call into the component; each item is
// the decision's JSON or the evaluator's *Error for that request. The error is for the call.
func (e *Evaluator) EvaluateBatchJSON(ctx context.Context, requests [][]byte) ([]BatchItem, error) {
	var out []BatchItem
	err := e.call(ctx, "evaluate-batch-json", func(in *instance) (err error) {
		out, err = in.batch(ctx, requests)
		return err
	})
	return out, err
}

// ContractIdentity is what validating a contract yields (SPEC §8).
type ContractIdentity struct {
	ContractID     string `json:"contract_id"`
	ContractDigest string `json:"contract_digest"`
}

// ValidateContractJSON validates a contract given as JSON text (SPEC §4) and returns its identity.
func (e *Evaluator) ValidateContractJSON(ctx context.Context, contract []byte) (*ContractIdentity, error) {
	var out []string
	err := e.call(ctx, "validate-contract-json", func(in *instance) (err error) {
		out, err = in.resultCall(ctx, "validate-contract-json", 2, contract)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &ContractIdentity{ContractID: out[0], ContractDigest: out[1]}, nil
}

// DiagnoseRequestJSON lists every fault of a request (empty when it evaluates); UnsupportedError
// on a WIT 0.1 component.
func (e *Evaluator) DiagnoseRequestJSON(ctx context.Context, request []byte) (*Diagnosis, error) {
	return e.diagnose(ctx, "diagnose-request-json", request)
}

// DiagnoseContractJSON lists every fault of a contract alone.
func (e *Evaluator) DiagnoseContractJSON(ctx context.Context, contract []byte) (*Diagnosis, error) {
	return e.diagnose(ctx, "diagnose-contract-json", contract)
}

func (e *Evaluator) diagnose(ctx context.Context, function string, arg []byte) (*Diagnosis, error) {
	var out *Diagnosis
	err := e.call(ctx, function, func(in *instance) (err error) {
		out, err = in.diagnose(ctx, function, arg)
		return err
	})
	return out, err
}

// GateJSON runs the gate of WIT 0.3.0 on a request and a proposed change, both JSON text, and
// returns the gate's verdict as JSON text; UnsupportedError on a component before 0.3.
func (e *Evaluator) GateJSON(ctx context.Context, request, change []byte) (string, error) {
	var out []string
	err := e.call(ctx, "gate-json", func(in *instance) (err error) {
		out, err = in.resultCall(ctx, "gate-json", 1, request, change)
		return err
	})
	if err != nil {
		return "", err
	}
	return out[0], nil
}

// ScalerReadingJSON returns what an external scaler reads for a request (WIT 0.3.0), as JSON
// text; UnsupportedError on a component before 0.3.
func (e *Evaluator) ScalerReadingJSON(ctx context.Context, request []byte) (string, error) {
	return e.plainString(ctx, "scaler-reading-json", request)
}

// LimitsJSON returns the evaluator's input limits (WIT 0.3.0) as JSON text.
func (e *Evaluator) LimitsJSON(ctx context.Context) (string, error) {
	return e.plainString(ctx, "limits-json")
}

// ValidateObservationsJSON checks a request's observations alone (WIT 0.3.0); nil when they pass.
func (e *Evaluator) ValidateObservationsJSON(ctx context.Context, request []byte) error {
	return e.call(ctx, "validate-observations-json", func(in *instance) error {
		_, err := in.resultCall(ctx, "validate-observations-json", 0, request)
		return err
	})
}

// DerivationText returns the derivation of a request's decision as the text every face prints
// (WIT 0.3.0).
func (e *Evaluator) DerivationText(ctx context.Context, request []byte) (string, error) {
	return e.oneString(ctx, "derivation-text", request)
}

func (e *Evaluator) plainString(ctx context.Context, function string, args ...[]byte) (string, error) {
	var out string
	err := e.call(ctx, function, func(in *instance) (err error) {
		out, err = in.stringCall(ctx, function, args...)
		return err
	})
	return out, err
}

// SimulateJSON replays a contract over a trace (`{"contract", "initial_replicas"?,
// "actuation_delay_s"?, "trace_csv" | "trace"}`) and returns `{"steps", "summary"}` as JSON text
// (tests/vectors-sim/README.md).
func (e *Evaluator) SimulateJSON(ctx context.Context, input []byte) (string, error) {
	return e.oneString(ctx, "simulate-json", input)
}
