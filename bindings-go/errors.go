package scaleunits

import (
	"errors"
	"fmt"
)

// Error is the evaluator's refusal of an input (SPEC §9): a typed code, the SPEC's message and
// the JSON path of the offending field. It is a value the evaluator returned, not a fault of the
// host: the Evaluator keeps serving. Use errors.As to read it.
type Error struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
	Path    string    `json:"path"`
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("%s at %s: %s", e.Code, e.Path, e.Message)
}

// Why a component is refused at load. Each is matched by errors.Is on a *LoadError.
var (
	// ErrInvalidComponent: the bytes are not a component this loader can run (corrupt,
	// truncated, a core module, a nested component, a core module wazero refuses).
	ErrInvalidComponent = errors.New("invalid component")
	// ErrImports: the component or its core module imports something; the evaluator imports nothing.
	ErrImports = errors.New("component has imports")
	// ErrWrongWorld: no `scale-units:evaluator/evaluator` interface of a supported version, or
	// a function of it missing or of another type.
	ErrWrongWorld = errors.New("wrong world")
	// ErrIncompatible: the component's info names a schema or WIT version this module does not speak.
	ErrIncompatible = errors.New("incompatible version")
	// ErrDigestMismatch: the component's sha256 is not the expected one.
	ErrDigestMismatch = errors.New("digest mismatch")
)

// LoadError refuses a component: Kind is one of the Err* values above (errors.Is matches it).
type LoadError struct {
	Kind    error
	Message string
}

func (e *LoadError) Error() string { return fmt.Sprintf("%v: %s", e.Kind, e.Message) }

// Unwrap lets errors.Is match the kind.
func (e *LoadError) Unwrap() error { return e.Kind }

func loadError(kind error, format string, args ...any) error {
	return &LoadError{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// UnsupportedError: the loaded component's WIT version (same major, an earlier minor) predates
// Function. Decided before the component is entered; the component keeps serving what it has.
type UnsupportedError struct {
	Function   string // the WIT name, such as "derive-json"
	WITVersion string // the component's, such as "0.1.0"
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("the component (WIT %s) does not export %s", e.WITVersion, e.Function)
}

// ErrGuest is matched (errors.Is) by every *GuestError.
var ErrGuest = errors.New("guest fault")

// GuestError: a call did not complete because the instance trapped, ran out of memory, was
// stopped by its context, or returned bytes that break the canonical ABI. The instance is
// discarded; the Evaluator keeps serving with fresh ones. Err is the cause (a context error
// when the deadline passed or the context was cancelled: errors.Is(err, context.DeadlineExceeded)).
type GuestError struct {
	Function string
	Message  string
	Err      error
}

func (e *GuestError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Function, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Function, e.Message)
}

// Is makes errors.Is(err, ErrGuest) true.
func (e *GuestError) Is(target error) bool { return target == ErrGuest }

// Unwrap gives the cause.
func (e *GuestError) Unwrap() error { return e.Err }
