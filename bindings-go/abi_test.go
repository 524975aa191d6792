package scaleunits

import (
	"context"
	"encoding/binary"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// The export names of the component's core module and their core types: what this module
// calls is pinned here, so a change of wit-bindgen's naming or of the WIT is caught.
func TestCoreExportNamesAndTypes(t *testing.T) {
	ctx := context.Background()
	parsed, err := parseComponent(component)
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed.core)*10 < len(component)*9 {
		t.Fatalf("the core module is %d bytes of the component's %d: expected most of it", len(parsed.core), len(component))
	}
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	compiled, err := rt.CompileModule(ctx, parsed.core)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for name, f := range compiled.ExportedFunctions() {
		got[name] = valueTypes(f.ParamTypes()) + "->" + valueTypes(f.ResultTypes())
	}
	const iface = "scale-units:evaluator/evaluator@0.3.0#"
	want := map[string]string{
		"cabi_realloc":                               "i32,i32,i32,i32->i32",
		iface + "evaluate-json":                      "i32,i32->i32",
		iface + "evaluate-batch-json":                "i32,i32->i32",
		iface + "validate-contract-json":             "i32,i32->i32",
		iface + "derive-json":                        "i32,i32->i32",
		iface + "diagnose-request-json":              "i32,i32->i32",
		iface + "diagnose-contract-json":             "i32,i32->i32",
		iface + "info":                               "->i32",
		"cabi_post_" + iface + "evaluate-json":       "i32->",
		"cabi_post_" + iface + "evaluate-batch-json": "i32->",
		"cabi_post_" + iface + "info":                "i32->",
	}
	for name, typ := range want {
		if got[name] != typ {
			t.Errorf("%s: %q, want %q", name, got[name], typ)
		}
	}
	if len(compiled.ImportedFunctions()) != 0 {
		t.Errorf("the core module imports %d functions", len(compiled.ImportedFunctions()))
	}
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("core exports: %s", strings.Join(names, ", "))
	if parsed.exports[len(parsed.exports)-1] != "scale-units:evaluator/evaluator@0.3.0" {
		t.Errorf("component exports %q", parsed.exports)
	}
}

func valueTypes(ts []uint8) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, map[uint8]string{0x7f: "i32", 0x7e: "i64", 0x7d: "f32", 0x7c: "f64"}[t])
	}
	return strings.Join(parts, ",")
}

// The layout of result<_, evaluation-error>: read back from the real component for a request it
// refuses, the code byte at 4, the message at 8 and the path at 16.
func TestErrorLayout(t *testing.T) {
	ev := testEvaluator(t)
	ctx := context.Background()
	in, err := ev.acquire(ctx, checkedKind)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.release(in)
	const function = "evaluate-json"
	err = in.callStrings(ctx, function, [][]byte{[]byte(`{"contract": 1}`)}, func(ret uint32) error {
		area, ok := in.memory.Read(ret, resultSize)
		if !ok {
			t.Fatal("return area outside memory")
		}
		if area[0] != 1 {
			t.Fatalf("discriminant %d, want 1 (error)", area[0])
		}
		if errorCodes[area[errorCodeOffset]] != CodeInvalidField {
			t.Fatalf("code byte %d", area[errorCodeOffset])
		}
		for _, off := range []int{errorMessageOff, errorPathOff} {
			ptr, n := binary.LittleEndian.Uint32(area[off:]), binary.LittleEndian.Uint32(area[off+4:])
			if b, ok := in.memory.Read(ptr, n); !ok || n == 0 || !strings.Contains(string(b), "contract") {
				t.Fatalf("string at %d: %q", off, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var refused *Error
	_, err = ev.EvaluateJSON(ctx, []byte(`{"contract": 1}`))
	if !errors.As(err, &refused) || refused.Code != CodeInvalidField || refused.Path != "contract" {
		t.Fatalf("%#v", err)
	}
}

// The component parser on arbitrary bytes: an error or a parsed component, never a panic
// (`go test` runs the seeds; `go test -fuzz FuzzParseComponent` explores).
func FuzzParseComponent(f *testing.F) {
	f.Add(component[:4096])
	f.Add(wrapComponent(evaluatorModule(hostileIface, "0.2.0", "1", trapNow).bytes(), []string{hostileIface}, "wasi:x/y@1.0.0"))
	f.Add([]byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0, 4, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0, 11, 3, 1, 0, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseComponent(b)
		if err == nil && p.core == nil {
			t.Fatal("parsed without a core module")
		}
		var load *LoadError
		if err != nil && !errors.As(err, &load) {
			t.Fatalf("an untyped error: %v", err)
		}
	})
}
