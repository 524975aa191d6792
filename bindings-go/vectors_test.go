package scaleunits

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// vectorsDir is the repository's conformance vectors, beside this module.
const vectorsDir = "../tests/vectors"

var (
	bundledOnce sync.Once
	bundled     *Evaluator
	bundledErr  error
)

// testEvaluator is one Evaluator of the bundled component shared by the tests that only call it.
func testEvaluator(t testing.TB) *Evaluator {
	t.Helper()
	bundledOnce.Do(func() { bundled, bundledErr = NewBundled(context.Background()) })
	if bundledErr != nil {
		t.Fatal(bundledErr)
	}
	return bundled
}

// Every vector folder, each a subtest: the JSON path, the typed path, the derivation, the
// diagnosis and the contract digest, as Vector.Check runs them.
func TestVectors(t *testing.T) {
	ev := testEvaluator(t)
	ctx := context.Background()
	groups, err := os.ReadDir(vectorsDir)
	if err != nil {
		t.Fatal(err)
	}
	total, typed, typedDecisions, decisions, derivations, diagnoses, gates, typedGates := 0, 0, 0, 0, 0, 0, 0, 0
	for _, group := range groups {
		if !group.IsDir() || group.Name() == "known-failures" || group.Name() == "tools" {
			continue
		}
		t.Run(group.Name(), func(t *testing.T) {
			suite, err := LoadConformanceSuite(filepath.Join(vectorsDir, group.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if len(suite.Vectors) == 0 {
				t.Fatalf("no vectors in %s", group.Name())
			}
			for i := range suite.Vectors {
				v := &suite.Vectors[i]
				total++
				if _, ok := v.TypedRequest(); ok {
					typed++
					if v.Expect.Decision != nil {
						typedDecisions++
					}
				}
				if v.Expect.Decision != nil {
					decisions++
				}
				if v.Expect.Derivation != nil {
					derivations++
				}
				if v.Expect.Diagnosis != nil {
					diagnoses++
				}
				if v.Change != nil {
					gates++
					var c Change
					if _, ok := v.TypedRequest(); ok && v.ChangeObject && json.Unmarshal(v.Change, &c) == nil {
						typedGates++
					}
				}
				for _, p := range v.Check(ctx, ev) {
					t.Errorf("%s: %s", v.ID, p)
				}
			}
		})
	}
	t.Logf("%d vectors: %d decisions, %d through the typed Request (%d of them decisions), %d derivations, %d diagnoses, %d gate changes (%d also through the typed Gate)", total, decisions, typed, typedDecisions, derivations, diagnoses, gates, typedGates)
	// Every vector that expects a decision goes through the typed path too: the Go types lose
	// nothing a valid request says.
	if typedDecisions != decisions {
		t.Errorf("%d of %d decision vectors round-trip through Request", typedDecisions, decisions)
	}
	if derivations == 0 || diagnoses == 0 || gates == 0 {
		t.Errorf("derivations %d, diagnoses %d, gates %d: the extensions were not exercised", derivations, diagnoses, gates)
	}
	if !ev.Supports("gate-json") || !ev.Supports("scaler-reading-json") {
		t.Error("the bundled component has no gate: the gate vectors were not run")
	}
}
