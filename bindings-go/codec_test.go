package scaleunits

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// codec.go against encoding/json: the same bytes written, the same Decision read.

// allVectors reads every vector of every folder of tests/vectors.
func allVectors(t testing.TB) []Vector {
	t.Helper()
	groups, err := os.ReadDir(vectorsDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []Vector
	for _, g := range groups {
		if !g.IsDir() {
			continue
		}
		suite, err := LoadConformanceSuite(filepath.Join(vectorsDir, g.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, suite.Vectors...)
	}
	if len(out) < 500 {
		t.Fatalf("only %d vectors found", len(out))
	}
	return out
}

// sameAsMarshal fails unless appendRequest writes json.Marshal's bytes for r (or declines
// where json.Marshal fails).
func sameAsMarshal(t testing.TB, r *Request) {
	t.Helper()
	want, err := json.Marshal(r)
	got, ok := appendRequest(nil, r)
	if !ok {
		if err == nil {
			t.Fatalf("appendRequest declines a request json.Marshal writes: %s", want)
		}
		return
	}
	if err != nil {
		t.Fatalf("appendRequest writes %s where json.Marshal fails: %v", got, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("appendRequest:\n%s\njson.Marshal:\n%s", got, want)
	}
}

func TestAppendRequestWritesWhatJSONMarshalWrites(t *testing.T) {
	n := 0
	for _, v := range allVectors(t) {
		var r Request
		if v.Request == nil || json.Unmarshal(v.Request, &r) != nil {
			continue
		}
		sameAsMarshal(t, &r)
		n++
	}
	if n < 300 {
		t.Fatalf("only %d vector requests read into Request", n)
	}
	t.Logf("%d vector requests", n)
	// What no vector holds: every optional part present and empty, text to escape, times with
	// nanoseconds and offsets, and times json.Marshal refuses.
	full := fuzzRequest("a<b>&\"\\\n\t\b\f\x01\u2028\u2029\xff é", 1, -5, 1<<62, 1_700_000_000_123_456_789, -3600*5-1800, 0xffff)
	sameAsMarshal(t, full)
	for _, at := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", -24*3600-60)),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 23*3600+59*60+59)),
		time.Date(0, 1, 1, 0, 0, 0, 999, time.UTC),
		{},
	} {
		r := *full
		r.Now = at
		sameAsMarshal(t, &r)
	}
}

// fuzzRequest builds a request with every field set from a few values.
func fuzzRequest(s string, i int64, j int64, u uint64, nanos int64, offset int, flags uint16) *Request {
	at := time.Unix(0, nanos).In(time.FixedZone("", offset))
	o := Observed{ObservedAt: at, ExpiresAt: at.Add(time.Duration(j)), SourceRef: s, SourceDigest: s + s}
	on := func(bit int) bool { return flags&(1<<bit) != 0 }
	ptr := func(bit int, v uint64) *uint64 {
		if on(bit) {
			return &v
		}
		return nil
	}
	boolPtr := func(bit int) *bool {
		if on(bit) {
			return Ptr(on(bit + 1))
		}
		return nil
	}
	r := &Request{
		Contract: Contract{
			SchemaVersion: s, UnitRef: s, Surface: SurfaceKind(s), Version: ptr(0, u),
			Policy: Policy{MinReplicas: ptr(1, u), MaxReplicas: ptr(2, 7), Target: u, TargetSignal: SignalKind(s),
				ScaleUpStep: ptr(3, 1), ScaleDownStep: ptr(4, 2), ScaleUpCooldownS: ptr(5, 3), ScaleDownCooldownS: ptr(6, u),
				DrainSeconds: ptr(7, 0), AllowScaleToZero: boolPtr(8), AllowScaleFromZero: boolPtr(9)},
			AllowedSignals:       []SignalKind{SignalKind(s), SignalQueueDepth},
			RequiredCapacityAxes: []CapacityAxis{CapacityAxis(s)},
			ReplicaDemands:       []CapacityDemand{{CapacityAxis(s), u}, {"cpu_milli", 0}},
			Quotas:               []QuotaBinding{{s, CapacityAxis(s), QuotaScope(s), u, boolPtr(10)}},
			PartitionLease:       &PartitionLease{boolPtr(11), ptr(12, u), boolPtr(13), ptr(14, 9), boolPtr(0)},
			Continuity:           ContinuityContract{ContinuityMode(s), Ptr(s), boolPtr(1), boolPtr(2), ptr(3, u)},
			SafetyRequired:       boolPtr(4),
			EngineAuthorityAxes:  []CapacityAxis{},
			ContractID:           s,
			ContractDigest:       s,
		},
		CurrentReplicas: i,
		Signal:          &SignalObservation{SignalKind(s), j, o},
		Capacities:      []CapacityObservation{{CapacityAxis(s), u, 1, 2, o}, {"memory_mib", 0, 0, 0, o}},
		Quotas:          []QuotaObservation{{s, QuotaScope(s), u, 3, o}},
		Continuity:      &ContinuityObservation{on(5), u, 4, o},
		Safety:          &SafetyObservation{on(6), on(7), Ptr(s), o},
		Now:             at,
		LastActionAt:    Ptr(at.Add(-time.Duration(i))),
	}
	if on(15) { // the other shape: optional parts absent, lists nil
		r.Contract.AllowedSignals, r.Contract.RequiredCapacityAxes, r.Contract.ReplicaDemands = nil, nil, nil
		r.Contract.Quotas, r.Contract.PartitionLease, r.Contract.EngineAuthorityAxes = nil, nil, nil
		r.Contract.PartitionLease = nil
		r.Signal, r.Capacities, r.Quotas, r.Continuity, r.Safety, r.LastActionAt = nil, nil, []QuotaObservation{}, nil, nil, nil
		r.Contract.SchemaVersion, r.Contract.ContractID = "", ""
	}
	return r
}

func FuzzAppendRequest(f *testing.F) {
	f.Add("mcp-gateway", int64(1), int64(0), uint64(3), int64(1_767_225_600_000_000_000), 0, uint16(0))
	f.Add("<&>\u2028\xff\x7f\"", int64(-1), int64(-1), uint64(1<<64-1), int64(-1), -1, uint16(0xffff))
	f.Add("é", int64(1<<62), int64(1<<40), uint64(0), int64(253_402_300_800_000_000_0), 86399, uint16(0x7fff))
	f.Fuzz(func(t *testing.T, s string, i, j int64, u uint64, nanos int64, offset int, flags uint16) {
		sameAsMarshal(t, fuzzRequest(s, i, j, u, nanos, offset, flags))
	})
}

// sameAsDecode fails unless readDecision reads text as decodeGuestJSON does, or declines it.
func sameAsDecode(t testing.TB, text string) bool {
	t.Helper()
	var fast Decision
	if !readDecision(text, &fast) {
		return false
	}
	var slow Decision
	if err := decodeGuestJSON("evaluate-json", text, &slow); err != nil {
		t.Fatalf("readDecision reads %q, decodeGuestJSON refuses it: %v", text, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nreadDecision   %+v\ndecodeGuestJSON %+v", text, fast, slow)
	}
	return true
}

// Every decision the component writes for a vector is read by readDecision, as encoding/json reads it.
func TestReadDecisionReadsWhatTheComponentWrites(t *testing.T) {
	ev := testEvaluator(t)
	ctx := context.Background()
	n := 0
	for _, v := range allVectors(t) {
		if v.Request == nil {
			continue
		}
		out, err := ev.EvaluateJSON(ctx, v.Request)
		if err != nil {
			continue
		}
		if !sameAsDecode(t, out) {
			t.Fatalf("%s: readDecision declines the component's decision %s", v.ID, out)
		}
		n++
	}
	if n < 290 {
		t.Fatalf("only %d decisions", n)
	}
	t.Logf("%d decisions", n)
}

func TestReadDecisionDeclinesWhatItLeavesToEncodingJSON(t *testing.T) {
	ev := testEvaluator(t)
	out, err := ev.EvaluateJSON(context.Background(), referenceRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"an unknown key":     out[:len(out)-1] + `,"extra":1}`,
		"a repeated key":     out[:len(out)-1] + `,"action":"hold"}`,
		"a key in capitals":  `{"Action":"hold"}`,
		"an escape":          `{"decision_id":"a\u0062"}`,
		"a null":             `{"reasons":null}`,
		"a negative number":  `{"current_replicas":-1}`,
		"a fraction":         `{"current_replicas":1.0}`,
		"an exponent":        `{"current_replicas":1e2}`,
		"a leading zero":     `{"current_replicas":01}`,
		"too large":          `{"current_replicas":18446744073709551616}`,
		"text after":         out + `x`,
		"a trailing comma":   `{"action":"hold",}`,
		"an evidence comma":  `{"evidence":[{"kind":"signal",}]}`,
		"not an object":      `null`,
		"a bad time":         `{"evaluated_at":"2026-01-01"}`,
		"not UTF-8":          "{\"action\":\"\xff\"}",
		"a control byte":     "{\"action\":\"\x01\"}",
		"unterminated":       `{"action":"hold"`,
		"evidence not a map": `{"evidence":["x"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			var d Decision
			if readDecision(text, &d) {
				t.Fatalf("readDecision read %q", text)
			}
		})
	}
	// And what it reads besides the component's exact text: whitespace, keys in another
	// order, keys left out, empty lists.
	for _, text := range []string{
		" {\n\t\"action\" : \"hold\" , \"reasons\" : [ ] ,\"evidence\":[ {\"code\":\"x\", \"kind\":\"signal\"} ]}\r\n",
		`{}`,
		`{"current_replicas":0,"desired_replicas":18446744073709551615,"drain_required":false}`,
	} {
		if !sameAsDecode(t, text) {
			t.Fatalf("readDecision declines %q", text)
		}
	}
}

func FuzzReadDecision(f *testing.F) {
	f.Add(`{"schema_version":"1","decision_id":"d","decision_digest":"sha256:00","contract_id":"c","evaluated_at":"2026-01-01T00:00:00.5+01:00","current_replicas":1,"desired_replicas":3,"action":"scale_up","reasons":["target_tracking"],"drain_required":false,"evidence":[{"kind":"signal","ref":"r","digest":"sha256:00","status":"accepted","code":"ok"}]}`)
	f.Add(`{"reasons":[],"evidence":[]}`)
	f.Add(`{"evaluated_at":"0000-01-01T00:00:00Z"}`)
	f.Fuzz(func(t *testing.T, text string) {
		sameAsDecode(t, text)
	})
}
