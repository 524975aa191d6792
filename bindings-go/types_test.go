package scaleunits

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// A Request built with time.Now() carries nanoseconds, which SPEC's time syntax refuses (at most
// six fractional digits): found by the example controller against a real API server, whose every
// reconcile was refused `invalid_time` at `now`. The request is written at microsecond
// resolution and decides as the same request written by hand at that resolution.
func TestTimesWithNanosecondsAreWrittenAtMicrosecondResolution(t *testing.T) {
	text, err := os.ReadFile(vectorsDir + "/reference/t01-mcp-target-tracks-deterministically.json")
	if err != nil {
		t.Fatal(err)
	}
	var request Request
	if err := json.Unmarshal(ParseVector("t01", text).Request, &request); err != nil {
		t.Fatal(err)
	}
	exact := request
	const nanos = 123_456_789 * time.Nanosecond
	request.Now = request.Now.Add(nanos)
	if request.Signal == nil || len(request.Capacities) == 0 {
		t.Fatal("t01 has a signal and capacities")
	}
	signal := *request.Signal
	signal.ObservedAt = signal.ObservedAt.Add(nanos)
	request.Signal = &signal
	capacities := append([]CapacityObservation(nil), request.Capacities...)
	capacities[0].ExpiresAt = capacities[0].ExpiresAt.Add(nanos)
	request.Capacities = capacities

	written, err := json.Marshal(request)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(written), ".123456") {
		t.Fatalf("no time written at microsecond resolution: %s", written)
	}
	if strings.Contains(string(written), "123456789") {
		t.Fatalf("nanoseconds written: %s", written)
	}
	if request.Now.Nanosecond()%1000 != 789 {
		t.Fatal("MarshalJSON changed the caller's request")
	}

	ev := testEvaluator(t)
	ctx := context.Background()
	got, err := ev.Evaluate(ctx, &request)
	if err != nil {
		t.Fatalf("a request with nanoseconds: %v", err)
	}
	exact.Now = exact.Now.Add(123_456 * time.Microsecond)
	want, err := ev.Evaluate(ctx, &exact)
	if err != nil {
		t.Fatal(err)
	}
	if got.Action != want.Action || got.DesiredReplicas != want.DesiredReplicas {
		t.Fatalf("decided %s %d, the request at microseconds %s %d", got.Action, got.DesiredReplicas, want.Action, want.DesiredReplicas)
	}
}
