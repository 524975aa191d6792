package scaleunits

import (
	"context"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// Checks is how a call that is running in the component is stopped when its context ends
// (DECISIONS.md, "Deadlines cost CPU on wazero"). Before a call enters, the context is checked
// whatever the Checks.
type Checks string

// The Checks an Evaluator runs with.
const (
	// ChecksAuto, the default: ChecksBudget, except on the component this module carries (its
	// sha256 is ComponentDigest) and wazero's compiler, where EvaluateJSON (and Evaluate) of a
	// request of at most BoundedRequestBytes runs on a second compilation of the same core
	// module without checks: the bundled core's work on such a request is bounded (the
	// slowest one found takes under 10 ms of CPU; DECISIONS.md), so there is nothing for a
	// check to stop.
	ChecksAuto Checks = "auto"
	// ChecksBudget: the core module is given a budget that its function entries, loop headers
	// and bulk memory operations pay from, in proportion to the code or the bytes they run;
	// when it is spent the call leaves the compiled code for Go, which checks the context and
	// stops the call or refills the budget. At most 2^20 units (16 MiB of instructions, or
	// bulk operations over 16 MiB) run between two checks. About a tenth more CPU than no
	// check on the bundled component. A core module the rewrite cannot read runs with
	// ChecksWazero instead.
	ChecksBudget Checks = "budget"
	// ChecksWazero: wazero's WithCloseOnContextDone, which leaves the compiled code for Go at
	// every loop iteration (about 9 600 times a decision of the bundled component: several
	// times its CPU). It does not see a recursion that fans out without a loop.
	ChecksWazero Checks = "wazero"
	// ChecksNone: no check inside a call (WithoutInterruption). A call that never returns
	// cannot be stopped, and while it runs the Go runtime cannot stop the world for a garbage
	// collection: the whole process waits for it.
	ChecksNone Checks = "none"
)

// BoundedRequestBytes is the largest request ChecksAuto runs without checks: 64 KiB. A request
// is a few KB (the reference t01 is 4.5 KB); a larger one runs with the budget.
const BoundedRequestBytes = 64 << 10

// WithChecks chooses how a running call is stopped by its context (default ChecksAuto).
// New refuses any other value (a plain error, before it reads the component).
func WithChecks(c Checks) Option { return func(cfg *config) { cfg.checks = c } }

// WithoutInterruption is WithChecks(ChecksNone): nothing stops a call once it has entered the
// component. Only for a component whose digest you trust and whose every input is bounded.
func WithoutInterruption() Option { return WithChecks(ChecksNone) }

// Checks returns how a running call of this Evaluator is stopped: ChecksAuto on the bundled
// component; ChecksBudget on another (ChecksAuto asked), or ChecksWazero where the rewrite
// cannot read the core module; otherwise the Checks asked for.
func (e *Evaluator) Checks() Checks { return e.checks }

// compile makes the runtime and compiles the core module with the Checks cfg asks for; with
// ChecksAuto on the bundled component, it compiles the plain module beside it.
func (e *Evaluator) compile(ctx context.Context, cfg *config, core []byte, bundled bool) error {
	newRuntime := func(closeOnDone bool) wazero.Runtime {
		rc := wazero.NewRuntimeConfig()
		if cfg.interpreter {
			rc = wazero.NewRuntimeConfigInterpreter()
		}
		rc = rc.WithCloseOnContextDone(closeOnDone).WithMemoryLimitPages(cfg.memoryLimitPages)
		if cfg.cache != nil {
			rc = rc.WithCompilationCache(cfg.cache)
		}
		return wazero.NewRuntimeWithConfig(ctx, rc)
	}
	var err error
	switch cfg.checks {
	case ChecksNone:
		e.runtime, e.checks = newRuntime(false), ChecksNone
		e.compiled, err = e.runtime.CompileModule(ctx, core)
		return err
	case ChecksAuto, ChecksBudget:
		b, err := withBudget(core)
		if err != nil {
			break
		}
		e.runtime, e.checks = newRuntime(false), ChecksBudget
		// The plain module compiles on another goroutine meanwhile (the same runtime: neither
		// has wazero's checks).
		var plain wazero.CompiledModule
		var plainErr error
		done := make(chan struct{})
		if cfg.checks == ChecksAuto && bundled && !cfg.interpreter {
			go func() {
				defer close(done)
				plain, plainErr = e.runtime.CompileModule(ctx, core)
			}()
		} else {
			close(done)
		}
		listen := experimental.WithFunctionListenerFactory(ctx, tickFactory(b.tick))
		e.compiled, err = e.runtime.CompileModule(listen, b.module)
		<-done
		if err == nil && plainErr == nil {
			if plain != nil {
				e.plain, e.checks = plain, ChecksAuto
			}
			return nil
		}
		// wazero refused a module: the original, with wazero's checks, either compiles or
		// gives the error to report.
		e.compiled, e.plain = nil, nil
		_ = e.runtime.Close(context.Background())
	}
	e.runtime, e.checks = newRuntime(true), ChecksWazero
	e.compiled, err = e.runtime.CompileModule(ctx, core)
	return err
}

// tickFactory listens to the tick function (its index) only.
type tickFactory uint32

func (t tickFactory) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	if def.Index() == uint32(t) {
		return tickListener{}
	}
	return nil
}

// tickListener runs, in Go, each time a call has spent its budget: a context that has ended
// stops the call (wazero turns the panic into the call's error; the instance is discarded).
type tickListener struct{}

// stopped is the panic value of a tick that ends a call, and the cause of the call's error.
type stopped struct{ err error }

func (s stopped) Error() string { return "stopped by its context: " + s.err.Error() }
func (s stopped) Unwrap() error { return s.err }

func (tickListener) Before(ctx context.Context, _ api.Module, _ api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	if err := ctx.Err(); err != nil {
		panic(stopped{err})
	}
	// The deadline is read from the clock as well: the timer that cancels the context waits
	// for the scheduler, and on a busy machine every core may be running compiled code.
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
		panic(stopped{context.DeadlineExceeded})
	}
}

func (tickListener) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}

func (tickListener) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}
