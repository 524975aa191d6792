package scaleunits

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
)

// processCPU is the CPU time this process has used: on a loaded machine the wall time per
// decision includes waiting for a core, so the benchmarks also report cpu-µs/op.
func processCPU() time.Duration {
	var r syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &r) != nil {
		return 0
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// loop runs f b.N times (b.Loop) and reports the CPU time per call beside the wall time.
func loop(b *testing.B, f func() error) {
	start := processCPU()
	n := 0
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if n > 0 {
		b.ReportMetric(float64(processCPU()-start)/float64(n)/1e3, "cpu-µs/op")
	}
}

// The reference request of `make bench`: reference vector t01 (an MCP gateway scaling 1 -> 3).
func t01(b *testing.B) []byte {
	b.Helper()
	text, err := os.ReadFile(vectorsDir + "/reference/t01-mcp-target-tracks-deterministically.json")
	if err != nil {
		b.Fatal(err)
	}
	v := ParseVector("t01", text)
	return v.Request
}

func BenchmarkEvaluateJSON(b *testing.B) {
	ev := testEvaluator(b)
	ctx := context.Background()
	req := t01(b)
	loop(b, func() error { _, err := ev.EvaluateJSON(ctx, req); return err })
}

// Without the checks that let a context stop a running call (WithoutInterruption).
func BenchmarkEvaluateJSONWithoutInterruption(b *testing.B) {
	ctx := context.Background()
	ev, err := NewBundled(ctx, WithoutInterruption())
	if err != nil {
		b.Fatal(err)
	}
	defer ev.Close(ctx)
	req := t01(b)
	loop(b, func() error { _, err := ev.EvaluateJSON(ctx, req); return err })
}

// With the budget, which ChecksAuto leaves out for this request (WithChecks(ChecksBudget)).
func BenchmarkEvaluateJSONBudget(b *testing.B) {
	ctx := context.Background()
	ev, err := NewBundled(ctx, WithChecks(ChecksBudget))
	if err != nil {
		b.Fatal(err)
	}
	defer ev.Close(ctx)
	req := t01(b)
	loop(b, func() error { _, err := ev.EvaluateJSON(ctx, req); return err })
}

// With wazero's own checks, the default before issue 41 (WithChecks(ChecksWazero)).
func BenchmarkEvaluateJSONWazeroChecks(b *testing.B) {
	ctx := context.Background()
	ev, err := NewBundled(ctx, WithChecks(ChecksWazero))
	if err != nil {
		b.Fatal(err)
	}
	defer ev.Close(ctx)
	req := t01(b)
	loop(b, func() error { _, err := ev.EvaluateJSON(ctx, req); return err })
}

// The typed path's conversion, each way, with this module's JSON code (codec.go) and with
// encoding/json, which Evaluate used before issue 41.
func BenchmarkConversion(b *testing.B) {
	var r Request
	if err := json.Unmarshal(t01(b), &r); err != nil {
		b.Fatal(err)
	}
	decision, err := testEvaluator(b).EvaluateJSON(context.Background(), t01(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("request/codec", func(b *testing.B) {
		buf := make([]byte, 0, 8<<10)
		loop(b, func() (err error) { buf, err = appendRequestJSON(buf[:0], &r); return err })
	})
	b.Run("request/encoding-json", func(b *testing.B) {
		loop(b, func() error { _, err := json.Marshal(&r); return err })
	})
	b.Run("decision/codec", func(b *testing.B) {
		loop(b, func() error {
			var d Decision
			if !readDecision(decision, &d) {
				return errors.New("readDecision declined the component's decision")
			}
			return nil
		})
	})
	b.Run("decision/encoding-json", func(b *testing.B) {
		loop(b, func() error { var d Decision; return decodeGuestJSON("evaluate-json", decision, &d) })
	})
}

func BenchmarkEvaluate(b *testing.B) {
	ev := testEvaluator(b)
	ctx := context.Background()
	var r Request
	if err := json.Unmarshal(t01(b), &r); err != nil {
		b.Fatal(err)
	}
	loop(b, func() error { _, err := ev.Evaluate(ctx, &r); return err })
}

// Sixteen goroutines on one Evaluator's pool; ns/op is per decision across them.
func BenchmarkEvaluateJSON16Goroutines(b *testing.B) {
	ev := testEvaluator(b)
	ctx := context.Background()
	req := t01(b)
	b.SetParallelism((16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := ev.EvaluateJSON(ctx, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Load (compile) and the first decision, without a compilation cache.
func BenchmarkFirstCallNoCache(b *testing.B) {
	ctx := context.Background()
	req := t01(b)
	for b.Loop() {
		ev, err := NewBundled(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ev.EvaluateJSON(ctx, req); err != nil {
			b.Fatal(err)
		}
		_ = ev.Close(ctx)
	}
}

// Load and the first decision with an on-disk compilation cache that already holds the
// component (a restarted controller).
func BenchmarkFirstCallDiskCache(b *testing.B) {
	ctx := context.Background()
	req := t01(b)
	dir := b.TempDir()
	warm, err := NewBundled(ctx, WithCacheDir(dir))
	if err != nil {
		b.Fatal(err)
	}
	_ = warm.Close(ctx)
	for b.Loop() {
		cache, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		ev, err := NewBundled(ctx, WithCompilationCache(cache))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ev.EvaluateJSON(ctx, req); err != nil {
			b.Fatal(err)
		}
		_ = ev.Close(ctx)
		_ = cache.Close(ctx)
	}
}
