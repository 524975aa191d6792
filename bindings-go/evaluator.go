package scaleunits

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The interface every supported component exports, before `@major.minor.patch`.
const interfacePrefix = "scale-units:evaluator/evaluator@"

// SupportedWIT is the newest WIT version this module speaks. A component of the same major and
// a minor at most this one loads; functions added after its minor are UnsupportedError.
const SupportedWIT = "0.3.0"

// supportedMinor is the minor of SupportedWIT.
const supportedMinor = 3

// SupportedSchema is the wire schema this module speaks (SPEC: "1").
const SupportedSchema = "1"

// DefaultMemoryLimitPages is the default limit of an instance's linear memory: 1024 pages of
// 64 KiB, 64 MiB, as the Rust host's default.
const DefaultMemoryLimitPages = 1024

// Every export the loader knows, with the WIT minor that added it and its core signature.
// Functions of 0.1 are required; later ones are optional (DECISIONS.md, "WIT 0.2.0 and the
// compatibility rule"): calling one the component lacks is an UnsupportedError.
type exportSpec struct {
	name     string
	since    int // the WIT minor that added it
	params   []api.ValueType
	results  []api.ValueType
	optional bool // not required even in a component of its minor
}

var (
	i32 = api.ValueTypeI32
	// A string argument is a pointer and a length; every result below is a return pointer.
	exportSpecs = []exportSpec{
		{"evaluate-json", 1, []api.ValueType{i32, i32}, []api.ValueType{i32}, false},
		{"evaluate-batch-json", 1, []api.ValueType{i32, i32}, []api.ValueType{i32}, false},
		{"validate-contract-json", 1, []api.ValueType{i32, i32}, []api.ValueType{i32}, false},
		{"info", 1, nil, []api.ValueType{i32}, false},
		{"derive-json", 2, []api.ValueType{i32, i32}, []api.ValueType{i32}, false},
		{"diagnose-request-json", 2, []api.ValueType{i32, i32}, []api.ValueType{i32}, false},
		{"diagnose-contract-json", 2, []api.ValueType{i32, i32}, []api.ValueType{i32}, false},
		{"gate-json", 3, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, false},
		{"scaler-reading-json", 3, []api.ValueType{i32, i32}, []api.ValueType{i32}, false},
		{"limits-json", 3, nil, []api.ValueType{i32}, false},
		{"validate-observations-json", 3, []api.ValueType{i32, i32}, []api.ValueType{i32}, false},
		{"derivation-text", 3, []api.ValueType{i32, i32}, []api.ValueType{i32}, false},
		// The simulator: every component has it, this module does not need it to evaluate.
		{"simulate-json", 1, []api.ValueType{i32, i32}, []api.ValueType{i32}, true},
	}
)

// Info is what the component says about itself (WIT `evaluator-info`).
type Info struct {
	EvaluatorVersion string `json:"evaluator_version"`
	SchemaVersion    string `json:"schema_version"`
	WITVersion       string `json:"wit_version"`
}

// Evaluator runs one evaluator component: one compiled module shared by a pool of instances.
// It is safe for any number of goroutines; each call takes an idle instance or makes one, and
// an instance that trapped, ran out of memory or was stopped by its context is closed, never
// reused. Close it when done.
type Evaluator struct {
	digest    string
	iface     string // such as scale-units:evaluator/evaluator@0.2.0
	minor     int
	info      Info
	runtime   wazero.Runtime
	compiled  wazero.CompiledModule
	has       map[string]bool
	maxIdle   int
	ownsCache wazero.CompilationCache
	checks    Checks

	// plain is the bundled component's core module compiled without checks, for the calls
	// whose work is bounded (ChecksAuto); nil otherwise.
	plain wazero.CompiledModule

	mu       sync.Mutex
	idle     [2][]*instance // idle instances of each kind (checkedKind, plainKind)
	inflight int
	closed   bool
	drained  *sync.Cond
}

// Option configures New.
type Option func(*config)

type config struct {
	memoryLimitPages uint32
	cache            wazero.CompilationCache
	cacheDir         string
	expectedDigest   string
	maxIdle          int
	interpreter      bool
	checks           Checks
}

// WithMemoryLimitPages limits each instance's linear memory to pages of 64 KiB (default
// DefaultMemoryLimitPages). A call that needs more traps and its instance is discarded.
func WithMemoryLimitPages(pages uint32) Option { return func(c *config) { c.memoryLimitPages = pages } }

// WithCompilationCache shares a wazero compilation cache (in memory or on disk) between
// evaluators, so that a component compiled once is not compiled again.
func WithCompilationCache(cache wazero.CompilationCache) Option {
	return func(c *config) { c.cache = cache }
}

// WithCacheDir keeps compiled code in dir, so that a later process loads the same component
// without compiling it (wazero.NewCompilationCacheWithDir).
func WithCacheDir(dir string) Option { return func(c *config) { c.cacheDir = dir } }

// WithExpectedDigest refuses a component whose sha256 is not digest ("sha256:" and 64 hex
// digits) with ErrDigestMismatch.
func WithExpectedDigest(digest string) Option { return func(c *config) { c.expectedDigest = digest } }

// WithMaxIdle keeps at most n idle instances (default GOMAXPROCS); more are made when more
// goroutines call at once and closed when they are returned.
func WithMaxIdle(n int) Option { return func(c *config) { c.maxIdle = n } }

// WithInterpreter runs the component on wazero's interpreter instead of its compiler.
func WithInterpreter() Option { return func(c *config) { c.interpreter = true } }

// Digest returns the component's sha256: "sha256:" and 64 lower-case hex digits.
func (e *Evaluator) Digest() string { return e.digest }

// Info returns what the component reported about itself when it was loaded.
func (e *Evaluator) Info() Info { return e.info }

// Interface returns the WIT interface the component exports, such as
// "scale-units:evaluator/evaluator@0.2.0".
func (e *Evaluator) Interface() string { return e.iface }

// Supports reports whether the component exports the WIT function name (such as "derive-json").
func (e *Evaluator) Supports(function string) bool { return e.has[function] }

// DigestOf returns the digest of bytes as Digest spells it.
func DigestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// New loads a component from its bytes: it checks the digest (WithExpectedDigest), takes the
// one core module out of the component, refuses imports, another world or an unsupported
// version (*LoadError), compiles it and instantiates it once to read its Info.
func New(ctx context.Context, component []byte, opts ...Option) (*Evaluator, error) {
	cfg := config{memoryLimitPages: DefaultMemoryLimitPages, maxIdle: runtime.GOMAXPROCS(0), checks: ChecksAuto}
	for _, opt := range opts {
		opt(&cfg)
	}
	switch cfg.checks {
	case ChecksAuto, ChecksBudget, ChecksWazero, ChecksNone:
	default:
		return nil, fmt.Errorf("scaleunits: unknown Checks %q", cfg.checks)
	}
	digest := DigestOf(component)
	if cfg.expectedDigest != "" && cfg.expectedDigest != digest {
		return nil, loadError(ErrDigestMismatch, "expected %s, the component is %s", cfg.expectedDigest, digest)
	}
	parsed, err := parseComponent(component)
	if err != nil {
		return nil, err
	}
	iface, minor, err := findInterface(parsed.exports)
	if err != nil {
		return nil, err
	}
	e := &Evaluator{digest: digest, iface: iface, minor: minor, maxIdle: cfg.maxIdle}
	e.drained = sync.NewCond(&e.mu)
	if cfg.cache == nil && cfg.cacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("compilation cache %s: %w", cfg.cacheDir, err)
		}
		cfg.cache, e.ownsCache = cache, cache
	}
	fail := func(err error) (*Evaluator, error) {
		if e.runtime != nil {
			_ = e.runtime.Close(context.Background())
		}
		if e.ownsCache != nil {
			_ = e.ownsCache.Close(context.Background())
		}
		return nil, err
	}
	if err := e.compile(ctx, &cfg, parsed.core, digest == ComponentDigest()); err != nil {
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		return fail(loadError(ErrInvalidComponent, "the core module: %v", err))
	}
	if err := e.checkExports(); err != nil {
		return fail(err)
	}
	in, err := e.instantiate(ctx, checkedKind)
	if err != nil {
		return fail(err)
	}
	info, err := in.info(ctx, e)
	in.close()
	if err != nil {
		return fail(loadError(ErrWrongWorld, "info: %v", err))
	}
	if info.SchemaVersion != SupportedSchema {
		return fail(loadError(ErrIncompatible, "schema %q (this module speaks %q)", info.SchemaVersion, SupportedSchema))
	}
	want := fmt.Sprintf("0.%d.", minor)
	if !strings.HasPrefix(info.WITVersion, want) {
		return fail(loadError(ErrIncompatible, "WIT %q (the component exports %s, so its info must say %sx)", info.WITVersion, iface, want))
	}
	e.info = info
	return e, nil
}

// findInterface picks the evaluator interface among the component's export names: the
// newest 0.x with x at most supportedMinor. A later minor or another major is ErrIncompatible.
func findInterface(exports []string) (string, int, error) {
	best, bestMinor := "", -1
	var later []string
	for _, name := range exports {
		version, ok := strings.CutPrefix(name, interfacePrefix)
		if !ok {
			continue
		}
		parts := strings.Split(version, ".")
		if len(parts) != 3 {
			continue
		}
		major, err1 := strconv.Atoi(parts[0])
		minor, err2 := strconv.Atoi(parts[1])
		if err1 != nil || err2 != nil {
			continue
		}
		if major != 0 || minor > supportedMinor || minor < 1 {
			later = append(later, name)
			continue
		}
		if minor > bestMinor {
			best, bestMinor = name, minor
		}
	}
	if best == "" {
		if len(later) > 0 {
			return "", 0, loadError(ErrIncompatible, "the component exports %q; this module speaks %s0.1 to %s%s", later, interfacePrefix, interfacePrefix, SupportedWIT)
		}
		return "", 0, loadError(ErrWrongWorld, "no export named %s0.x.y (exports: %q)", interfacePrefix, exports)
	}
	return best, bestMinor, nil
}

// checkExports holds the core module to the canonical ABI this loader calls: no import, a
// memory, cabi_realloc, and every function of the component's WIT minor with its core type.
func (e *Evaluator) checkExports() error {
	if imports := e.compiled.ImportedFunctions(); len(imports) > 0 {
		names := make([]string, 0, len(imports))
		for _, f := range imports {
			module, name, _ := f.Import()
			names = append(names, module+"."+name)
		}
		return loadError(ErrImports, "the core module imports %q; the evaluator must import nothing", names)
	}
	if mems := e.compiled.ImportedMemories(); len(mems) > 0 {
		return loadError(ErrImports, "the core module imports a memory")
	}
	if _, ok := e.compiled.ExportedMemories()["memory"]; !ok {
		return loadError(ErrWrongWorld, "the core module exports no memory named \"memory\"")
	}
	funcs := e.compiled.ExportedFunctions()
	check := func(name string, params, results []api.ValueType) error {
		f, ok := funcs[name]
		if !ok {
			return loadError(ErrWrongWorld, "the core module exports no %q", name)
		}
		if !sameTypes(f.ParamTypes(), params) || !sameTypes(f.ResultTypes(), results) {
			return loadError(ErrWrongWorld, "%q has type %v -> %v, expected %v -> %v", name, f.ParamTypes(), f.ResultTypes(), params, results)
		}
		return nil
	}
	if err := check("cabi_realloc", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}); err != nil {
		return err
	}
	e.has = map[string]bool{}
	for _, spec := range exportSpecs {
		name := e.iface + "#" + spec.name
		if _, ok := funcs[name]; !ok && (spec.since > 1 || spec.optional) {
			continue
		}
		if err := check(name, spec.params, spec.results); err != nil {
			return err
		}
		if post, ok := funcs["cabi_post_"+name]; ok && (!sameTypes(post.ParamTypes(), []api.ValueType{i32}) || len(post.ResultTypes()) != 0) {
			return loadError(ErrWrongWorld, "cabi_post_%s has the wrong type", name)
		}
		e.has[spec.name] = true
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ErrClosed is returned by calls on a closed Evaluator.
var ErrClosed = fmt.Errorf("scaleunits: evaluator closed")

// The kinds of instance: of the module compiled with the Evaluator's Checks, and of the
// bundled component's module compiled without them (plain).
const (
	checkedKind = 0
	plainKind   = 1
)

// acquire takes an idle instance of the kind or makes one.
func (e *Evaluator) acquire(ctx context.Context, kind int) (*instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	e.inflight++
	var in *instance
	if n := len(e.idle[kind]); n > 0 {
		in, e.idle[kind] = e.idle[kind][n-1], e.idle[kind][:n-1]
	}
	e.mu.Unlock()
	if in != nil {
		return in, nil
	}
	in, err := e.instantiate(ctx, kind)
	if err != nil {
		e.release(nil)
		return nil, err
	}
	return in, nil
}

// release returns a healthy instance to the pool; a broken one (or nil) is closed.
func (e *Evaluator) release(in *instance) {
	e.mu.Lock()
	e.inflight--
	keep := in != nil && !in.broken && !e.closed && len(e.idle[checkedKind])+len(e.idle[plainKind]) < e.maxIdle
	if keep {
		e.idle[in.kind] = append(e.idle[in.kind], in)
	}
	if e.inflight == 0 {
		e.drained.Broadcast()
	}
	e.mu.Unlock()
	if in != nil && !keep {
		in.close()
	}
}

// Idle returns the number of idle instances in the pool (for tests and metrics).
func (e *Evaluator) Idle() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.idle[checkedKind]) + len(e.idle[plainKind])
}

// Close waits for the calls in flight, then frees every instance and the compiled module.
// Later calls return ErrClosed.
func (e *Evaluator) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	for e.inflight > 0 {
		e.drained.Wait()
	}
	idle := append(e.idle[checkedKind], e.idle[plainKind]...)
	e.idle = [2][]*instance{}
	e.mu.Unlock()
	for _, in := range idle {
		in.close()
	}
	err := e.runtime.Close(ctx)
	if e.ownsCache != nil {
		_ = e.ownsCache.Close(ctx)
	}
	return err
}

func (e *Evaluator) instantiate(ctx context.Context, kind int) (*instance, error) {
	compiled := e.compiled
	if kind == plainKind {
		compiled = e.plain
	}
	mod, err := e.runtime.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		if ctx.Err() != nil {
			return nil, &GuestError{Function: "instantiate", Message: "stopped", Err: ctx.Err()}
		}
		return nil, &GuestError{Function: "instantiate", Message: "the core module could not be instantiated", Err: err}
	}
	in := &instance{mod: mod, kind: kind, memory: mod.ExportedMemory("memory"), realloc: mod.ExportedFunction("cabi_realloc"), funcs: map[string]api.Function{}, posts: map[string]api.Function{}}
	for _, spec := range exportSpecs {
		if !e.has[spec.name] {
			continue
		}
		name := e.iface + "#" + spec.name
		in.funcs[spec.name] = mod.ExportedFunction(name)
		if post := mod.ExportedFunction("cabi_post_" + name); post != nil {
			in.posts[spec.name] = post
		}
	}
	return in, nil
}

// call runs fn on a pooled instance with the Evaluator's checks, releasing it after, broken or not.
func (e *Evaluator) call(ctx context.Context, function string, fn func(*instance) error) error {
	return e.callOn(ctx, checkedKind, function, fn)
}

// callOn runs fn on a pooled instance of the kind.
func (e *Evaluator) callOn(ctx context.Context, kind int, function string, fn func(*instance) error) error {
	if !e.has[function] {
		return &UnsupportedError{Function: function, WITVersion: e.info.WITVersion}
	}
	in, err := e.acquire(ctx, kind)
	if err != nil {
		return err
	}
	err = fn(in)
	e.release(in)
	return err
}
