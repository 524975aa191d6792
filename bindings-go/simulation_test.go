package scaleunits

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Every simulation vector of tests/vectors-sim through SimulateJSON, judged as that folder's
// README says: the number of steps, each field an expected step gives, the whole summary, an
// error by code and message fragment. Numbers compare exactly.
func TestSimulationVectors(t *testing.T) {
	ev := testEvaluator(t)
	ctx := context.Background()
	files, err := filepath.Glob("../tests/vectors-sim/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 6 {
		t.Fatalf("only %d simulation vectors", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var vector struct {
				Input  json.RawMessage `json:"input"`
				Expect struct {
					Steps   json.RawMessage `json:"steps"`
					Summary json.RawMessage `json:"summary"`
					Error   *ExpectedError  `json:"error"`
				} `json:"expect"`
			}
			if err := json.Unmarshal(text, &vector); err != nil {
				t.Fatal(err)
			}
			out, err := ev.SimulateJSON(ctx, vector.Input)
			if want := vector.Expect.Error; want != nil {
				var refused *Error
				if !errors.As(err, &refused) || refused.Code != want.Code || !strings.Contains(refused.Message, want.MessageContains) {
					t.Fatalf("%v, want %s containing %q", err, want.Code, want.MessageContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := decodeExact([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			expect := `{"steps": ` + string(vector.Expect.Steps) + `, "summary": ` + string(vector.Expect.Summary) + `}`
			if err := decodeExact([]byte(expect), &want); err != nil {
				t.Fatal(err)
			}
			gotSteps, _ := got["steps"].([]any)
			wantSteps, _ := want["steps"].([]any)
			if len(gotSteps) != len(wantSteps) {
				t.Fatalf("%d steps, want %d", len(gotSteps), len(wantSteps))
			}
			for i := range wantSteps {
				w, _ := wantSteps[i].(map[string]any)
				g, _ := gotSteps[i].(map[string]any)
				for key, value := range w {
					if !reflect.DeepEqual(g[key], value) {
						t.Errorf("steps[%d].%s: %v, want %v", i, key, g[key], value)
					}
				}
			}
			if !reflect.DeepEqual(got["summary"], want["summary"]) {
				t.Errorf("summary %v, want %v", got["summary"], want["summary"])
			}
		})
	}
}
