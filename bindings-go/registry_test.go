package scaleunits

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

func gateSuite(t testing.TB) *ConformanceSuite {
	t.Helper()
	suite, err := LoadConformanceSuite(vectorsDir+"/reference", vectorsDir+"/derivation", vectorsDir+"/diagnosis", vectorsDir+"/errors")
	if err != nil {
		t.Fatal(err)
	}
	return suite
}

func fixture010(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../tests/fixtures/scale_units_evaluator-wit-0.1.0.wasm")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Swaps between the current component and the WIT 0.1.0 one under eight goroutines of load:
// no call fails, every decision is the one its policy makes, and both policies served.
func TestRegistrySwapsUnderConcurrentEvaluation(t *testing.T) {
	ctx := context.Background()
	reg := NewRegistry(gateSuite(t))
	defer reg.Close(ctx)
	a, err := reg.Stage(ctx, Candidate{Bytes: component})
	if err != nil {
		t.Fatal(err)
	}
	b, err := reg.Stage(ctx, Candidate{Bytes: fixture010(t)})
	if err != nil {
		t.Fatal(err)
	}
	if a.VectorsPassed != len(gateSuite(t).Vectors) || b.Info.WITVersion != "0.1.0" {
		t.Fatalf("staged %+v and %+v", a, b)
	}
	req := referenceRequest(t)
	want := map[string]string{}
	for _, d := range []string{a.Digest, b.Digest} {
		if _, err := reg.Activate(d); err != nil {
			t.Fatal(err)
		}
		out, digest, err := reg.EvaluateJSON(ctx, req)
		if err != nil || digest != d {
			t.Fatalf("%s: %v, %s", d, err, digest)
		}
		want[d] = out
	}
	var served [2]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				out, digest, err := reg.EvaluateJSON(ctx, req)
				if err != nil {
					errs <- err
					return
				}
				if out != want[digest] {
					errs <- errors.New("policy " + digest + " answered " + out)
					return
				}
				if digest == a.Digest {
					served[0].Add(1)
				} else {
					served[1].Add(1)
				}
			}
		}()
	}
	for i := range 60 {
		var err error
		if i%3 == 2 {
			_, _, err = reg.Rollback()
		} else if i%2 == 0 {
			_, err = reg.Activate(a.Digest)
		} else {
			_, err = reg.Activate(b.Digest)
		}
		if err != nil {
			t.Fatal(err)
		}
		// Let some evaluations run on this policy.
		for n := served[0].Load() + served[1].Load(); served[0].Load()+served[1].Load() < n+3; {
			select {
			case err := <-errs:
				t.Fatal(err)
			default:
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if served[0].Load() == 0 || served[1].Load() == 0 {
		t.Fatalf("served %d and %d: both policies should have served", served[0].Load(), served[1].Load())
	}
	t.Logf("%d decisions by the current component, %d by the 0.1.0 one, over 60 swaps", served[0].Load(), served[1].Load())
}

func TestRegistryRefusals(t *testing.T) {
	ctx := context.Background()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry(gateSuite(t), WithTrustKey(pub))
	defer reg.Close(ctx)
	digest := DigestOf(component)
	if _, err := reg.Stage(ctx, Candidate{Bytes: component}); !errors.Is(err, ErrSignatureMissing) {
		t.Fatalf("unsigned: %v", err)
	}
	otherPub, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	_ = otherPub
	if _, err := reg.Stage(ctx, Candidate{Bytes: component, Signature: ed25519.Sign(otherPriv, []byte(digest))}); !errors.Is(err, ErrSignatureInvalid) {
		t.Fatalf("signed by another key: %v", err)
	}
	if _, err := reg.Stage(ctx, Candidate{Bytes: component, Signature: ed25519.Sign(priv, []byte(DigestOf(fixture010(t))))}); !errors.Is(err, ErrSignatureInvalid) {
		t.Fatalf("a signature over another digest: %v", err)
	}
	if _, err := reg.Stage(ctx, Candidate{Bytes: component, Signature: []byte("short")}); !errors.Is(err, ErrSignatureInvalid) {
		t.Fatalf("a short signature: %v", err)
	}
	if _, err := reg.Stage(ctx, Candidate{Bytes: component, Signature: ed25519.Sign(priv, []byte(digest)), ExpectedDigest: DigestOf(nil)}); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("another expected digest: %v", err)
	}
	// A signed component from a file with its .sig beside it, as the Rust registry reads them.
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.wasm")
	if err := os.WriteFile(path, component, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".sig", []byte(hex.EncodeToString(ed25519.Sign(priv, []byte(digest)))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	staged, err := reg.StageFile(ctx, path)
	if err != nil || !staged.Signed || staged.Digest != digest {
		t.Fatalf("a signed file: %+v, %v", staged, err)
	}
	if _, _, err := reg.Rollback(); !errors.Is(err, ErrNothingToRollBack) {
		t.Fatalf("rollback before any activation: %v", err)
	}
	if _, err := reg.Activate(DigestOf(nil)); !errors.Is(err, ErrUnknownPolicy) {
		t.Fatalf("activating what is not staged: %v", err)
	}
	if _, err := reg.Activate(digest); err != nil {
		t.Fatal(err)
	}
	if err := reg.Unstage(digest); !errors.Is(err, ErrPolicyInUse) {
		t.Fatalf("unstaging the active policy: %v", err)
	}
}

// A component that traps fails the gate and is not staged; an empty suite stages nothing.
func TestRegistryGate(t *testing.T) {
	ctx := context.Background()
	reg := NewRegistry(gateSuite(t))
	defer reg.Close(ctx)
	trapping := wrapComponent(evaluatorModule(hostileIface, "0.2.0", "1", trapNow).bytes(), []string{hostileIface}, "")
	_, err := reg.Stage(ctx, Candidate{Bytes: trapping})
	var gate *ConformanceError
	if !errors.As(err, &gate) || gate.Passed != 0 || gate.Failed != maxGateFailures {
		t.Fatalf("a trapping component: %v", err)
	}
	if len(reg.StagedDigests()) != 0 {
		t.Fatalf("staged after a refusal: %v", reg.StagedDigests())
	}
	// A changed expectation fails the real component too: the gate compares.
	suite := gateSuite(t)
	v := &suite.Vectors[0]
	v.Expect.Decision = []byte(`{"action":"hold"}`)
	if _, err := NewRegistry(suite).Stage(ctx, Candidate{Bytes: component}); !errors.As(err, &gate) || gate.Failed != 1 {
		t.Fatalf("a vector expecting another decision: %v", err)
	}
	if _, err := NewRegistry(&ConformanceSuite{}).Stage(ctx, Candidate{Bytes: component}); !errors.Is(err, ErrNoConformanceVectors) {
		t.Fatalf("an empty suite: %v", err)
	}
	if _, _, err := reg.EvaluateJSON(ctx, referenceRequest(t)); !errors.Is(err, ErrNoActivePolicy) {
		t.Fatalf("no active policy: %v", err)
	}
}
