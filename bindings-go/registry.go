package scaleunits

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// Registry holds staged evaluator components and the active one, as the Rust host's
// PolicyRegistry does (host-rs/src/registry.rs): a component becomes a policy only once its
// digest matches (when one is expected), its ed25519 signature verifies (when a trust key is
// set), it loads (no imports, the right world, a supported version) and it passes the
// conformance gate. Activation is one atomic pointer swap: an evaluation takes the active
// Evaluator when it starts and finishes on it, so a swap never fails an evaluation or mixes
// two versions in one answer. Safe for any number of goroutines.
type Registry struct {
	suite    *ConformanceSuite
	trustKey ed25519.PublicKey
	opts     []Option

	active atomic.Pointer[activePolicy]

	mu          sync.Mutex // staging, activation, rollback, unstaging
	staged      map[string]*Evaluator
	previous    []string // digests active before the current one, oldest first
	activations uint64
}

type activePolicy struct {
	ev         *Evaluator
	activation uint64
}

// RegistryOption configures NewRegistry.
type RegistryOption func(*Registry)

// WithTrustKey makes a valid ed25519 signature over each candidate's digest mandatory: the
// signed message is the ASCII text of the digest, "sha256:" and 64 lower-case hex digits
// (host-rs/src/registry.rs, signing_message).
func WithTrustKey(key ed25519.PublicKey) RegistryOption {
	return func(r *Registry) { r.trustKey = key }
}

// WithEvaluatorOptions passes options to every Evaluator the registry loads.
func WithEvaluatorOptions(opts ...Option) RegistryOption {
	return func(r *Registry) { r.opts = append(r.opts, opts...) }
}

// Registry errors, matched with errors.Is (a *ConformanceError is read with errors.As).
var (
	ErrSignatureMissing     = errors.New("scaleunits: a trust key is set and the candidate carries no signature")
	ErrSignatureInvalid     = errors.New("scaleunits: the candidate's signature does not verify against the trust key")
	ErrNoConformanceVectors = errors.New("scaleunits: the conformance suite holds no vector")
	ErrUnknownPolicy        = errors.New("scaleunits: no staged policy has that digest")
	ErrNothingToRollBack    = errors.New("scaleunits: no earlier activation to roll back to")
	ErrNoActivePolicy       = errors.New("scaleunits: no policy is active")
	ErrPolicyInUse          = errors.New("scaleunits: the policy is active or the rollback target")
)

// ConformanceError refuses a candidate that failed the conformance gate.
type ConformanceError struct {
	Digest   string
	Passed   int
	Failed   int
	Failures []string // at most maxGateFailures
}

func (e *ConformanceError) Error() string {
	return fmt.Sprintf("scaleunits: %s failed the conformance gate: %d passed, %d failed; first: %s", e.Digest, e.Passed, e.Failed, strings.Join(e.Failures, " | "))
}

// The gate stops after this many failures: a candidate that fails is refused either way.
const maxGateFailures = 10

// NewRegistry returns an empty registry whose gate is suite.
func NewRegistry(suite *ConformanceSuite, opts ...RegistryOption) *Registry {
	r := &Registry{suite: suite, staged: map[string]*Evaluator{}}
	for _, opt := range opts {
		opt(r)
	}
	return r
}

// Candidate is a component offered to Stage, with what vouches for it.
type Candidate struct {
	Bytes          []byte
	Signature      []byte // a detached ed25519 signature (64 bytes) over the digest's text
	ExpectedDigest string // refused unless the component's digest is this, when set
}

// Staged describes a staged policy.
type Staged struct {
	Digest        string
	Info          Info
	Signed        bool // a signature was verified
	VectorsPassed int
	AlreadyStaged bool
}

// Stage verifies, loads and gates a candidate, then stages it; staging the same component
// again returns it (after checking its signature again).
func (r *Registry) Stage(ctx context.Context, c Candidate) (*Staged, error) {
	digest := DigestOf(c.Bytes)
	if c.ExpectedDigest != "" && c.ExpectedDigest != digest {
		return nil, loadError(ErrDigestMismatch, "expected %s, the candidate is %s", c.ExpectedDigest, digest)
	}
	signed, err := r.verify(digest, c.Signature)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	ev, ok := r.staged[digest]
	r.mu.Unlock()
	if ok {
		return &Staged{Digest: digest, Info: ev.Info(), Signed: signed, AlreadyStaged: true}, nil
	}
	if r.suite == nil || len(r.suite.Vectors) == 0 {
		return nil, ErrNoConformanceVectors
	}
	ev, err = New(ctx, c.Bytes, r.opts...)
	if err != nil {
		return nil, err
	}
	report := r.suite.Run(ctx, ev, maxGateFailures)
	if report.Failed > 0 || report.Passed == 0 {
		_ = ev.Close(context.Background())
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, &ConformanceError{Digest: digest, Passed: report.Passed, Failed: report.Failed, Failures: report.Failures}
	}
	r.mu.Lock()
	if existing, ok := r.staged[digest]; ok { // staged meanwhile by another goroutine
		r.mu.Unlock()
		_ = ev.Close(context.Background())
		return &Staged{Digest: digest, Info: existing.Info(), Signed: signed, AlreadyStaged: true}, nil
	}
	r.staged[digest] = ev
	r.mu.Unlock()
	return &Staged{Digest: digest, Info: ev.Info(), Signed: signed, VectorsPassed: report.Passed}, nil
}

// StageFile stages the component at path, with the signature in path+".sig" (hex) when that
// file exists, as the Rust registry's stage_file.
func (r *Registry) StageFile(ctx context.Context, path string) (*Staged, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := Candidate{Bytes: b}
	text, err := os.ReadFile(path + ".sig")
	switch {
	case err == nil:
		sig, decodeErr := hex.DecodeString(strings.TrimSpace(string(text)))
		if decodeErr != nil {
			return nil, fmt.Errorf("%w: %s.sig is not hex", ErrSignatureInvalid, path)
		}
		c.Signature = sig
	case !os.IsNotExist(err):
		return nil, err
	}
	return r.Stage(ctx, c)
}

func (r *Registry) verify(digest string, sig []byte) (bool, error) {
	if r.trustKey == nil {
		return false, nil
	}
	if sig == nil {
		return false, fmt.Errorf("%w (%s)", ErrSignatureMissing, digest)
	}
	if len(sig) != ed25519.SignatureSize || len(r.trustKey) != ed25519.PublicKeySize {
		return false, fmt.Errorf("%w: an ed25519 signature is 64 bytes (%s)", ErrSignatureInvalid, digest)
	}
	if !ed25519.Verify(r.trustKey, []byte(digest), sig) {
		return false, fmt.Errorf("%w (%s)", ErrSignatureInvalid, digest)
	}
	return true, nil
}

// Activate makes the staged policy digest the active one, atomically, and returns its
// activation number. Evaluations already running finish on the policy they started with.
func (r *Registry) Activate(digest string) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev, ok := r.staged[digest]
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrUnknownPolicy, digest)
	}
	r.activations++
	if current := r.active.Load(); current != nil {
		r.previous = append(r.previous, current.ev.Digest())
	}
	r.active.Store(&activePolicy{ev: ev, activation: r.activations})
	return r.activations, nil
}

// Rollback activates again the policy that was active before the current one and returns its
// digest and the new activation number.
func (r *Registry) Rollback() (string, uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active.Load() == nil || len(r.previous) == 0 {
		return "", 0, ErrNothingToRollBack
	}
	digest := r.previous[len(r.previous)-1]
	ev, ok := r.staged[digest]
	if !ok {
		return "", 0, fmt.Errorf("%w: %s", ErrUnknownPolicy, digest)
	}
	r.previous = r.previous[:len(r.previous)-1]
	r.activations++
	r.active.Store(&activePolicy{ev: ev, activation: r.activations})
	return digest, r.activations, nil
}

// Unstage drops a staged policy and closes its Evaluator (after the calls in flight on it);
// the active policy and the rollback target cannot be dropped.
func (r *Registry) Unstage(digest string) error {
	r.mu.Lock()
	ev, ok := r.staged[digest]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnknownPolicy, digest)
	}
	if a := r.active.Load(); (a != nil && a.ev == ev) || (len(r.previous) > 0 && r.previous[len(r.previous)-1] == digest) {
		r.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrPolicyInUse, digest)
	}
	delete(r.staged, digest)
	r.mu.Unlock()
	return ev.Close(context.Background())
}

// Active returns the active Evaluator and its activation number (nil, 0 before any activation).
func (r *Registry) Active() (*Evaluator, uint64) {
	a := r.active.Load()
	if a == nil {
		return nil, 0
	}
	return a.ev, a.activation
}

// StagedDigests lists the digests of the staged policies.
func (r *Registry) StagedDigests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.staged))
	for d := range r.staged {
		out = append(out, d)
	}
	return out
}

// EvaluateJSON evaluates on the active policy and returns the decision and the digest of the
// policy that made it.
func (r *Registry) EvaluateJSON(ctx context.Context, request []byte) (decision, digest string, err error) {
	for {
		a := r.active.Load()
		if a == nil {
			return "", "", ErrNoActivePolicy
		}
		decision, err = a.ev.EvaluateJSON(ctx, request)
		// Unstaged between the load and the call: take the policy active now.
		if errors.Is(err, ErrClosed) && r.active.Load() != a {
			continue
		}
		return decision, a.ev.Digest(), err
	}
}

// Close closes every staged Evaluator.
func (r *Registry) Close(ctx context.Context) error {
	r.mu.Lock()
	staged := r.staged
	r.staged = map[string]*Evaluator{}
	r.active.Store(nil)
	r.previous = nil
	r.mu.Unlock()
	var errs []error
	for _, ev := range staged {
		errs = append(errs, ev.Close(ctx))
	}
	return errors.Join(errs...)
}
