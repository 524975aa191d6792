package scaleunits

import (
	"encoding/binary"
)

// A small WebAssembly binary writer for the hostile components of hostile_test.go: core
// modules written byte by byte, and the component around one. No tool at build or run time.

func wasmName(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func vec(items ...[]byte) []byte {
	out := uleb(uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

// coreFunc is one exported function: its name, type index and body (instructions, no locals,
// without the final `end`).
type coreFunc struct {
	name string
	typ  int
	body []byte
}

// Function types of the evaluator's core exports.
const (
	typeRealloc = iota // (i32, i32, i32, i32) -> i32
	typeNoArgs         // () -> i32
	typeString         // (i32, i32) -> i32
	typePost           // (i32) -> ()
)

// hostileModule writes a core module with one memory of `pages` pages (exported "memory"),
// a bump allocator `cabi_realloc`, the functions given, a data segment at `dataAt`, and when
// importFunc is set, an imported function.
type hostileModule struct {
	funcs      []coreFunc
	data       map[uint32][]byte
	importFunc bool
	noRealloc  bool
}

func i32const(v int32) []byte { return append([]byte{0x41}, sleb(int64(v))...) }

func (m hostileModule) bytes() []byte {
	out := append([]byte{}, modulePreamble...)
	i32t := byte(0x7f)
	types := vec(
		[]byte{0x60, 4, i32t, i32t, i32t, i32t, 1, i32t},
		[]byte{0x60, 0, 1, i32t},
		[]byte{0x60, 2, i32t, i32t, 1, i32t},
		[]byte{0x60, 1, i32t, 0},
	)
	out = append(out, section(1, types)...)
	imported := 0
	if m.importFunc {
		out = append(out, section(2, vec(append(append(wasmName("env"), wasmName("f")...), 0x00, typePost)))...)
		imported = 1
	}
	funcs := m.funcs
	if !m.noRealloc {
		// global.get 0; global.get 0; local.get 3; i32.add; global.set 0 → the old pointer.
		funcs = append([]coreFunc{{"cabi_realloc", typeRealloc, []byte{0x23, 0, 0x23, 0, 0x20, 3, 0x6a, 0x24, 0}}}, funcs...)
	}
	var typeIdx, exports, bodies [][]byte
	for i, f := range funcs {
		typeIdx = append(typeIdx, uleb(uint64(f.typ)))
		exports = append(exports, append(append(wasmName(f.name), 0x00), uleb(uint64(imported+i))...))
		body := append(append([]byte{0}, f.body...), 0x0b)
		bodies = append(bodies, append(uleb(uint64(len(body))), body...))
	}
	out = append(out, section(3, vec(typeIdx...))...)
	out = append(out, section(5, vec([]byte{0x00, 1}))...)                                          // one memory, min 1 page
	out = append(out, section(6, vec(append([]byte{i32t, 1}, append(i32const(8192), 0x0b)...)))...) // mutable i32 heap pointer
	exports = append(exports, append(append(wasmName("memory"), 0x02), 0))
	out = append(out, section(7, vec(exports...))...)
	out = append(out, section(10, vec(bodies...))...)
	var segs [][]byte
	for at, b := range m.data {
		seg := append([]byte{0x00}, append(i32const(int32(at)), 0x0b)...)
		segs = append(segs, append(seg, append(uleb(uint64(len(b))), b...)...))
	}
	if len(segs) > 0 {
		out = append(out, section(11, vec(segs...))...)
	}
	return out
}

// wrapComponent puts a core module in a component exporting the named interfaces (an instance
// export each, as wit-component writes them), with an import when importName is set.
func wrapComponent(core []byte, exportNames []string, importName string) []byte {
	out := append([]byte{}, componentPreamble...)
	if importName != "" {
		// import: name, then an extern descriptor (instance of type 0).
		out = append(out, section(10, vec(append(append([]byte{0x00}, wasmName(importName)...), 0x05, 0)))...)
	}
	out = append(out, section(1, core)...)
	var exports [][]byte
	for i, name := range exportNames {
		exports = append(exports, append(append([]byte{0x00}, wasmName(name)...), 0x05, byte(i), 0x00))
	}
	if len(exports) > 0 {
		out = append(out, section(11, vec(exports...))...)
	}
	return out
}

func le32(vs ...uint32) []byte {
	var out []byte
	for _, v := range vs {
		out = binary.LittleEndian.AppendUint32(out, v)
	}
	return out
}

// Fixed places in a hostile module's memory.
const (
	infoArea     = 1024 // evaluator-info: three strings
	okArea       = 1100 // result ok(contract-identity)
	badStrArea   = 1200 // result ok with a string outside memory
	badDiscArea  = 1300 // result with discriminant 7
	badCodeArea  = 1400 // result err with error code 200
	badUTF8Area  = 1500 // result ok with a string that is not UTF-8
	stringsStart = 2048
)

// evaluatorModule is a hostile module shaped like the evaluator: info answers with the given
// versions, validate-contract-json answers ok, and evaluate-json runs evaluateBody.
func evaluatorModule(iface, witVersion, schema string, evaluateBody []byte) hostileModule {
	strs := []string{"9.9.9", schema, witVersion, "\xff\xfe"}
	var blob []byte
	var at []uint32
	for _, s := range strs {
		at = append(at, stringsStart+uint32(len(blob)))
		blob = append(blob, s...)
	}
	ret := func(area int32) []byte { return i32const(area) }
	return hostileModule{
		funcs: []coreFunc{
			{iface + "#info", typeNoArgs, ret(infoArea)},
			{iface + "#evaluate-json", typeString, evaluateBody},
			{iface + "#evaluate-batch-json", typeString, []byte{0x00, 0x41, 0}}, // unreachable
			{iface + "#validate-contract-json", typeString, ret(okArea)},
			{"cabi_post_" + iface + "#evaluate-json", typePost, nil},
		},
		data: map[uint32][]byte{
			infoArea:     le32(at[0], uint32(len(strs[0])), at[1], uint32(len(strs[1])), at[2], uint32(len(strs[2]))),
			okArea:       le32(0, at[0], uint32(len(strs[0])), at[1], uint32(len(strs[1]))),
			badStrArea:   le32(0, 0xffff0000, 16),
			badDiscArea:  le32(7, at[0], 1),
			badCodeArea:  le32(1, 200, at[0], 1, at[0], 1),
			badUTF8Area:  le32(0, at[3], 2),
			stringsStart: blob,
		},
	}
}
