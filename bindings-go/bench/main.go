// Command bench times the Go module on one request for `make bench`'s one table
// (benches/table.py --go FILE): each path's per-call time over batches of calls, as the Node
// and Python scripts do. The last two rows are the default paths as they were before issue 41
// (wazero's own deadline checks; Evaluate through encoding/json), measured in the same run.
//
// With -compare ROUNDS it compares the Checks instead, for DECISIONS.md: each round runs a batch
// on an Evaluator of each Checks, one after the other, and the ratios to ChecksNone are taken
// within each round (so a machine whose load changes moves all of a round alike).
//
//	go run ./bench [-vector FILE] [-batches N] [-calls N] -json FILE
//	go run ./bench -compare 41 [-calls N]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	scaleunits "scale-units.dev/go"
)

type row struct {
	Path      string    `json:"path"`
	PerCallUS []float64 `json:"per_call_us"`
	Native    string    `json:"native"`
}

func main() {
	vector := flag.String("vector", "../tests/vectors/reference/t01-mcp-target-tracks-deterministically.json", "the request's vector")
	batches := flag.Int("batches", 30, "batches per path")
	calls := flag.Int("calls", 200, "calls per batch")
	out := flag.String("json", "", "write the per-call times here")
	rounds := flag.Int("compare", 0, "compare the Checks over this many rounds instead")
	flag.Parse()
	var err error
	if *rounds > 0 {
		err = compare(*vector, *rounds, *calls)
	} else {
		err = run(*vector, *batches, *calls, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(vectorFile string, batches, calls int, out string) error {
	ctx := context.Background()
	text, err := os.ReadFile(vectorFile)
	if err != nil {
		return err
	}
	request := scaleunits.ParseVector(vectorFile, text).Request
	var typed scaleunits.Request
	if err := json.Unmarshal(request, &typed); err != nil {
		return err
	}
	ev, err := scaleunits.NewBundled(ctx)
	if err != nil {
		return err
	}
	defer ev.Close(ctx)
	fast, err := scaleunits.NewBundled(ctx, scaleunits.WithoutInterruption())
	if err != nil {
		return err
	}
	defer fast.Close(ctx)
	budget, err := scaleunits.NewBundled(ctx, scaleunits.WithChecks(scaleunits.ChecksBudget))
	if err != nil {
		return err
	}
	defer budget.Close(ctx)
	// Before issue 41: wazero's own checks (WithCloseOnContextDone) were the default, and
	// Evaluate went through encoding/json both ways.
	before, err := scaleunits.NewBundled(ctx, scaleunits.WithChecks(scaleunits.ChecksWazero))
	if err != nil {
		return err
	}
	defer before.Close(ctx)
	for _, c := range []struct {
		ev   *scaleunits.Evaluator
		want scaleunits.Checks
	}{{ev, scaleunits.ChecksAuto}, {budget, scaleunits.ChecksBudget}, {before, scaleunits.ChecksWazero}, {fast, scaleunits.ChecksNone}} {
		if c.ev.Checks() != c.want {
			return fmt.Errorf("checks %s, want %s", c.ev.Checks(), c.want)
		}
	}
	want, err := ev.EvaluateJSON(ctx, request)
	if err != nil {
		return err
	}
	check := func(got string, err error) error {
		if err == nil && got != want {
			err = fmt.Errorf("a different decision: %s", got)
		}
		return err
	}
	parallel := func(n int) error {
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < n; i += 16 {
					if err := check(ev.EvaluateJSON(ctx, request)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	jsonPath := func(ev *scaleunits.Evaluator) func(int) error {
		return func(n int) error {
			for range n {
				if err := check(ev.EvaluateJSON(ctx, request)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	paths := []struct {
		name   string
		native string
		batch  func(n int) error
	}{
		{"EvaluateJSON(text) -> text", "evaluate_json", jsonPath(ev)},
		{"Evaluate(*Request) -> *Decision", "evaluate_json", func(n int) error {
			for range n {
				if _, err := ev.Evaluate(ctx, &typed); err != nil {
					return err
				}
			}
			return nil
		}},
		{"EvaluateJSON, WithoutInterruption", "evaluate_json", jsonPath(fast)},
		{"EvaluateJSON, WithChecks(ChecksBudget)", "evaluate_json", jsonPath(budget)},
		{fmt.Sprintf("EvaluateJSON, 16 goroutines on the pool (GOMAXPROCS %d), per decision", runtime.GOMAXPROCS(0)), "evaluate_json", parallel},
		{"before issue 41: EvaluateJSON, wazero's checks", "evaluate_json", jsonPath(before)},
		{"before issue 41: Evaluate, wazero's checks, encoding/json", "evaluate_json", func(n int) error {
			for range n {
				text, err := json.Marshal(&typed)
				if err != nil {
					return err
				}
				out, err := before.EvaluateJSON(ctx, text)
				if err != nil {
					return err
				}
				var d scaleunits.Decision
				dec := json.NewDecoder(strings.NewReader(out))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&d); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	var rows []row
	for _, p := range paths {
		if err := p.batch(calls); err != nil { // warm up
			return err
		}
		r := row{Path: p.name, Native: p.native}
		for range batches {
			start := time.Now()
			if err := p.batch(calls); err != nil {
				return err
			}
			r.PerCallUS = append(r.PerCallUS, float64(time.Since(start).Nanoseconds())/1e3/float64(calls))
		}
		rows = append(rows, r)
		sorted := slices.Sorted(slices.Values(r.PerCallUS))
		fmt.Printf("%-60s %8.2f µs (median of %d batches)\n", p.name, sorted[len(sorted)/2], len(sorted))
	}
	if out == "" {
		return nil
	}
	report := map[string]any{"face": fmt.Sprintf("Go %s (wazero v1.12.0)", runtime.Version()), "component": ev.Digest(), "rows": rows}
	b, err := json.MarshalIndent(report, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var r syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &r) != nil {
		return 0
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

func compare(vectorFile string, rounds, calls int) error {
	ctx := context.Background()
	text, err := os.ReadFile(vectorFile)
	if err != nil {
		return err
	}
	request := scaleunits.ParseVector(vectorFile, text).Request
	type variant struct {
		name  string
		opts  []scaleunits.Option
		calls int
		ev    *scaleunits.Evaluator
		wall  []float64
		cpu   []float64
		ratio []float64
	}
	variants := []*variant{
		{name: "ChecksNone (WithoutInterruption)", opts: []scaleunits.Option{scaleunits.WithChecks(scaleunits.ChecksNone)}},
		{name: "ChecksAuto (the default)"},
		{name: "ChecksBudget", opts: []scaleunits.Option{scaleunits.WithChecks(scaleunits.ChecksBudget)}},
		{name: "ChecksWazero (the default before issue 41)", opts: []scaleunits.Option{scaleunits.WithChecks(scaleunits.ChecksWazero)}},
	}
	for _, v := range variants {
		if v.ev, err = scaleunits.NewBundled(ctx, v.opts...); err != nil {
			return err
		}
		defer v.ev.Close(ctx)
		v.calls = calls
		if v.ev.Checks() == scaleunits.ChecksWazero {
			v.calls = max(1, calls/5)
		}
		for range 20 { // warm up
			if _, err := v.ev.EvaluateJSON(ctx, request); err != nil {
				return err
			}
		}
	}
	for range rounds {
		var base float64
		for _, v := range variants {
			start, cpu := time.Now(), processCPU()
			for range v.calls {
				if _, err := v.ev.EvaluateJSON(ctx, request); err != nil {
					return err
				}
			}
			c := float64((processCPU() - cpu).Nanoseconds()) / 1e3 / float64(v.calls)
			v.wall = append(v.wall, float64(time.Since(start).Nanoseconds())/1e3/float64(v.calls))
			v.cpu = append(v.cpu, c)
			if base == 0 {
				base = c
			}
			v.ratio = append(v.ratio, c/base)
		}
	}
	quartiles := func(x []float64) (float64, float64, float64) {
		s := slices.Sorted(slices.Values(x))
		return s[len(s)/4], s[len(s)/2], s[3*len(s)/4]
	}
	fmt.Printf("| Checks | median µs/decision (wall) | median CPU µs/decision | CPU × ChecksNone, median of %d rounds (IQR) |\n|---|---:|---:|---:|\n", rounds)
	for _, v := range variants {
		_, wall, _ := quartiles(v.wall)
		_, cpu, _ := quartiles(v.cpu)
		low, mid, high := quartiles(v.ratio)
		fmt.Printf("| %s | %.1f | %.1f | %.2f (%.2f–%.2f) |\n", v.name, wall, cpu, mid, low, high)
	}
	return nil
}
