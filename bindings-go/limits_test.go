package scaleunits

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// The bundled component at its input limits. SPEC §3 bounds each list (MAX_OBSERVATIONS 64,
// MAX_DEMANDS 32, ...), but the core reads a list whole before it checks the bound, and the
// JSON reader builds the whole document before anything reads it: what bounds the text, and
// so the work, is the instance's memory (DefaultMemoryLimitPages, 64 MiB), with nesting at
// most 128 deep. The slowest request found under that limit is an object whose keys share a
// long prefix: the reader keeps the keys of an object of more than 16 in a sorted set, and
// every comparison walks the prefix. The longest call is a simulation of MAX_TRACE_STEPS
// (100 000) steps, which evaluates each. Each must return on its own, typed, and a deadline
// must stop it early. (The times are logged for BENCHMARKS.md; nothing here asserts a speed.)

// sharedPrefixKeys is {"x":{"<prefix>0":0,"<prefix>1":0,...}}.
func sharedPrefixKeys(n, prefix int) []byte {
	var b strings.Builder
	p := strings.Repeat("k", prefix)
	b.WriteString(`{"x":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s%d":0`, p, i)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// manyCapacities is reference vector t01 with n copies of its first capacity observation.
func manyCapacities(t *testing.T, n int) []byte {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(referenceT01(t), &r); err != nil {
		t.Fatal(err)
	}
	var caps []json.RawMessage
	if err := json.Unmarshal(r["capacities"], &caps); err != nil {
		t.Fatal(err)
	}
	list := make([]json.RawMessage, n)
	for i := range list {
		list[i] = caps[0]
	}
	r["capacities"], _ = json.Marshal(list)
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func referenceT01(t *testing.T) []byte {
	t.Helper()
	text, err := os.ReadFile(vectorsDir + "/reference/t01-mcp-target-tracks-deterministically.json")
	if err != nil {
		t.Fatal(err)
	}
	return ParseVector("t01", text).Request
}

// longestSimulation is a simulation vector's contract over a trace of steps steps, 30 s apart,
// its signal swinging above and below the target.
func longestSimulation(t *testing.T, steps int) []byte {
	text, err := os.ReadFile("../tests/vectors-sim/spike-step-cap-and-cooldowns.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Input map[string]json.RawMessage }
	if err := json.Unmarshal(text, &v); err != nil {
		t.Fatal(err)
	}
	delete(v.Input, "trace")
	var csv strings.Builder
	csv.WriteString("time,signal\n")
	start := time.Date(2026, 8, 19, 12, 0, 0, 0, time.UTC)
	for i := range steps {
		signal := 150
		if i%7 < 3 {
			signal = 900
		}
		fmt.Fprintf(&csv, "%s,%d\n", start.Add(time.Duration(i)*30*time.Second).Format(time.RFC3339), signal)
	}
	v.Input["trace_csv"], _ = json.Marshal(csv.String())
	out, err := json.Marshal(v.Input)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSlowestCallsStillReturn(t *testing.T) {
	ctx := context.Background()
	ev := testEvaluator(t)
	cases := []struct {
		name  string
		input []byte
		call  func(context.Context, []byte) (string, error)
	}{
		// 100 000 keys sharing 200 bytes: about 21 MB (150 000 do not fit in 64 MiB).
		{"keys sharing a prefix", sharedPrefixKeys(100_000, 200), ev.EvaluateJSON},
		// 50 000 capacity observations, read before their bound of 64 is checked (100 000 do
		// not fit).
		{"capacities", manyCapacities(t, 50_000), ev.EvaluateJSON},
		{"a simulation of MAX_TRACE_STEPS", longestSimulation(t, 100_000), ev.SimulateJSON},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start, cpu := time.Now(), processCPU()
			var out string
			err := returnsWithin(t, 5*time.Minute, func() (err error) { out, err = c.call(ctx, c.input); return err })
			t.Logf("%d bytes: returned after %v (process CPU %v): %d bytes, %.120v", len(c.input),
				time.Since(start).Round(time.Millisecond), (processCPU() - cpu).Round(time.Millisecond), len(out), err)
			var refused *Error
			var guest *GuestError
			switch {
			case err == nil, errors.As(err, &refused):
			case errors.As(err, &guest) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
				// The instance's memory limit: a trap, and the instance discarded.
			default:
				t.Fatalf("%v, want a result, an *Error or a GuestError of the memory limit", err)
			}
			// The same call under a deadline of 50 ms is stopped.
			deadline, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			start = time.Now()
			err = returnsWithin(t, time.Minute, func() error { _, err := c.call(deadline, c.input); return err })
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("under a 50 ms deadline: %v, want context.DeadlineExceeded", err)
			}
			t.Logf("under a 50 ms deadline: stopped after %v", time.Since(start).Round(time.Millisecond))
			if _, err := ev.EvaluateJSON(ctx, referenceT01(t)); err != nil {
				t.Fatalf("after the call: %v", err)
			}
		})
	}
}

// The work bound ChecksAuto leans on: the bundled core's work on a request of at most
// BoundedRequestBytes, counted in the budget's units (deterministic, whatever the machine),
// for the slowest shapes found at that size. A core whose reading or evaluation grows faster
// than its input would fail here, and the bound in DECISIONS.md would need its numbers again.
func TestBoundedRequestsCostAtMost(t *testing.T) {
	ctx := context.Background()
	parsed, err := parseComponent(component)
	if err != nil {
		t.Fatal(err)
	}
	b, err := withBudget(parsed.core)
	if err != nil {
		t.Fatal(err)
	}
	ticks := 0
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	counting := experimental.FunctionListenerFactoryFunc(func(def api.FunctionDefinition) experimental.FunctionListener {
		if def.Index() != b.tick {
			return nil
		}
		return experimental.FunctionListenerFunc(func(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
			ticks++
		})
	})
	compiled, err := r.CompileModule(experimental.WithFunctionListenerFactory(ctx, counting), b.module)
	if err != nil {
		t.Fatal(err)
	}
	ev := &Evaluator{runtime: r, compiled: compiled, iface: testEvaluator(t).iface, has: testEvaluator(t).has}
	in, err := ev.instantiate(ctx, checkedKind)
	if err != nil {
		t.Fatal(err)
	}
	budget := in.mod.(experimental.InternalModule).Global(int(b.budget))
	cost := func(request []byte) (int64, error) {
		ticks = 0
		before := int64(int32(budget.Get()))
		_, err := in.resultCall(ctx, "evaluate-json", 1, request)
		return before - int64(int32(budget.Get())) + int64(ticks)*tickBudget, err
	}
	reference, err := cost(referenceT01(t))
	if err != nil {
		t.Fatal(err)
	}
	fit := func(build func(n int) []byte) []byte { // the largest n whose text fits
		n := 1
		for len(build(2*n)) <= BoundedRequestBytes {
			n *= 2
		}
		for step := n / 2; step > 0; step /= 2 {
			if len(build(n+step)) <= BoundedRequestBytes {
				n += step
			}
		}
		return build(n)
	}
	// An array of n copies of element, in an unknown field.
	array := func(element string) []byte {
		return fit(func(n int) []byte { return []byte(`{"x":[` + strings.Repeat(element+",", n) + `0]}`) })
	}
	shapes := map[string][]byte{
		"keys, no prefix":        fit(func(n int) []byte { return sharedPrefixKeys(n, 0) }),
		"keys sharing 50 bytes":  fit(func(n int) []byte { return sharedPrefixKeys(n, 50) }),
		"keys sharing 200 bytes": fit(func(n int) []byte { return sharedPrefixKeys(n, 200) }),
		"capacities":             fit(func(n int) []byte { return manyCapacities(t, n) }),
		"escapes":                fit(func(n int) []byte { return []byte(`{"x":"` + strings.Repeat(`\u00e9`, n) + `"}`) }),
		"zeros":                  array(`0`),
		"nested arrays":          array(`[[[[[[[[[[]]]]]]]]]]`),
		"arrays 125 deep":        array(strings.Repeat("[", 125) + strings.Repeat("]", 125)),
		"empty objects":          array(`{}`),
		"small objects":          array(`{"a":0}`),
		"empty strings":          array(`""`),
		"floats":                 array(`1.7976931348623157e308`),
		"tiny floats":            array(`2.2250738585072011e-308`),
		"long integers":          array(`123456789012345678901234567890123456789`),
	}
	const bound = 100 // times the reference request's cost
	for name, request := range shapes {
		units, err := cost(request)
		var refused *Error
		if !errors.As(err, &refused) {
			t.Fatalf("%s: %v, want an *Error", name, err)
		}
		// What the same request takes on the bundled Evaluator, which runs it without checks
		// (process CPU over 5 calls: on a shared machine the wall time includes waiting).
		cpu := processCPU()
		for range 5 {
			if _, err := testEvaluator(t).EvaluateJSON(ctx, request); !errors.As(err, &refused) {
				t.Fatalf("%s without checks: %v, want an *Error", name, err)
			}
		}
		t.Logf("%-24s %6d bytes: %10d units, %5.1f× the reference request (%d units); %v CPU a call without checks",
			name, len(request), units, float64(units)/float64(reference), reference, ((processCPU() - cpu) / 5).Round(time.Microsecond))
		if units > bound*reference {
			t.Errorf("%s: %d units, more than %d× the reference request's %d", name, units, bound, reference)
		}
	}
}
