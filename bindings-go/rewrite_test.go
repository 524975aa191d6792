package scaleunits

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tetratelabs/wazero"
)

// The budget rewrite (rewrite.go) is held to what it promises: the original module, every
// byte in order, with the payments inserted where they belong and nothing else.

// sectionsOf splits a core module into its sections.
func sectionsOf(t testing.TB, m []byte) (ids []byte, bodies [][]byte) {
	t.Helper()
	r := reader{b: m, pos: 8}
	for !r.done() {
		id, err1 := r.byte()
		n, err2 := r.u32()
		body, err3 := r.bytes(int(n))
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("section at %d: %v", r.pos, err)
		}
		ids, bodies = append(ids, id), append(bodies, body)
	}
	return ids, bodies
}

// entriesAfterCount returns a vector's count and its entries.
func entriesAfterCount(t testing.TB, body []byte) (uint32, []byte) {
	t.Helper()
	if body == nil {
		return 0, nil
	}
	r := reader{b: body}
	n, err := r.u32()
	if err != nil {
		t.Fatal(err)
	}
	return n, body[r.pos:]
}

// checkInsertsOnly compares a rewritten module with its original section by section and
// instruction by instruction.
func checkInsertsOnly(t testing.TB, original []byte, b *budgeted) {
	t.Helper()
	oIDs, oBodies := sectionsOf(t, original)
	rIDs, rBodies := sectionsOf(t, b.module)
	find := func(ids []byte, bodies [][]byte, id byte) []byte {
		for i := range ids {
			if ids[i] == id {
				return bodies[i]
			}
		}
		return nil
	}
	// Every section the rewrite does not touch is there, unchanged and in the same order.
	var kept [][]byte
	for i, id := range rIDs {
		if id != 1 && id != 3 && id != 6 && id != 10 {
			kept = append(kept, rBodies[i])
		}
	}
	k := 0
	for i, id := range oIDs {
		if id == 1 || id == 3 || id == 6 || id == 10 {
			continue
		}
		if k >= len(kept) || !bytes.Equal(kept[k], oBodies[i]) {
			t.Fatalf("section %d (the %dth) changed or moved", id, i)
		}
		k++
	}
	if k != len(kept) {
		t.Fatalf("%d sections added besides types, functions, globals and code", len(kept)-k)
	}
	// Types, functions and globals: the original entries and one more each.
	types, funcs, globals := find(oIDs, oBodies, 1), find(oIDs, oBodies, 3), find(oIDs, oBodies, 6)
	nTypes, typeEntries := entriesAfterCount(t, types)
	appended := func(id byte, n uint32, entries, extra []byte) {
		got := find(rIDs, rBodies, id)
		want := append(append(uleb(uint64(n+1)), entries...), extra...)
		if !bytes.Equal(got, want) {
			t.Fatalf("section %d is not the original with one entry appended", id)
		}
	}
	appended(1, nTypes, typeEntries, []byte{0x60, 0, 0})
	nFuncs, funcEntries := entriesAfterCount(t, funcs)
	appended(3, nFuncs, funcEntries, uleb(uint64(nTypes)))
	nGlobals, globalEntries := entriesAfterCount(t, globals)
	appended(6, nGlobals, globalEntries, append(append([]byte{0x7f, 0x01, 0x41}, sleb(tickBudget)...), 0x0b))
	if b.tick != nFuncs || b.budget != nGlobals {
		t.Fatalf("tick %d, budget %d: want %d, %d", b.tick, b.budget, nFuncs, nGlobals)
	}
	// Code: each body is the original's, with the payments.
	oCode := reader{b: find(oIDs, oBodies, 10)}
	rCode := reader{b: find(rIDs, rBodies, 10)}
	on, _ := oCode.u32()
	rn, _ := rCode.u32()
	if rn != on+1 || on != nFuncs {
		t.Fatalf("%d bodies, want %d", rn, on+1)
	}
	for i := range on {
		osize, _ := oCode.u32()
		obody, _ := oCode.bytes(int(osize))
		rsize, _ := rCode.u32()
		rbody, err := rCode.bytes(int(rsize))
		if err != nil {
			t.Fatal(err)
		}
		if err := sameBodyWithPayments(obody, rbody, b); err != nil {
			t.Fatalf("function %d: %v", i, err)
		}
	}
	tsize, _ := rCode.u32()
	tick, _ := rCode.bytes(int(tsize))
	wantTick := append(append(append(append([]byte{0x00, 0x41}, sleb(tickBudget)...), 0x24), uleb(uint64(b.budget))...), 0x0b)
	if !bytes.Equal(tick, wantTick) || !rCode.done() {
		t.Fatalf("the tick's body is % x", tick)
	}
}

// decoded is one instruction of a body: its bytes and kind.
type decoded struct {
	bytes []byte
	kind  int
}

func decodeBody(body []byte) (locals []byte, code []decoded, err error) {
	r := reader{b: body}
	groups, err := r.u32()
	if err != nil {
		return nil, nil, err
	}
	for range groups {
		if _, err := r.u32(); err != nil {
			return nil, nil, err
		}
		if _, err := r.byte(); err != nil {
			return nil, nil, err
		}
	}
	locals = body[:r.pos]
	for !r.done() {
		start := r.pos
		op, _ := r.byte()
		kind, err := decode(&r, op)
		if err != nil {
			return nil, nil, fmt.Errorf("at %d: %w", start, err)
		}
		code = append(code, decoded{body[start:r.pos], kind})
	}
	return locals, code, nil
}

// sameBodyWithPayments: the rewritten body is the original's instructions, in order, with a
// payment of 1 + (code outside every loop)/16 units at the start, a payment of 1 + (its body
// less the loops nested in it)/16 after each loop, a length payment before each bulk
// operation, and nothing else.
func sameBodyWithPayments(original, rewritten []byte, b *budgeted) error {
	oLocals, oCode, err := decodeBody(original)
	if err != nil {
		return fmt.Errorf("the original: %w", err)
	}
	rLocals, rCode, err := decodeBody(rewritten)
	if err != nil {
		return fmt.Errorf("the rewritten body: %w", err)
	}
	bulk := false
	var scratch uint32
	for _, in := range oCode {
		bulk = bulk || in.kind == memoryBulk || in.kind == tableBulk
	}
	if bulk {
		// One more local group, of one i32, and the scratch local is the last local.
		r := reader{b: oLocals}
		groups, _ := r.u32()
		want := append(append(uleb(uint64(groups)+1), oLocals[r.pos:]...), 0x01, 0x7f)
		if !bytes.Equal(rLocals, want) {
			return fmt.Errorf("locals % x, want % x", rLocals, want)
		}
		// The scratch local is the one a local.tee right before a global.get of the budget names.
		getBudget := append([]byte{0x23}, uleb(uint64(b.budget))...)
		found := false
		for i := 0; i+1 < len(rCode) && !found; i++ {
			if rCode[i].bytes[0] == 0x22 && bytes.Equal(rCode[i+1].bytes, getBudget) {
				sr := reader{b: rCode[i].bytes, pos: 1}
				scratch, _ = sr.u32()
				found = true
			}
		}
		if !found {
			return fmt.Errorf("no local.tee of a scratch local before a bulk operation")
		}
	} else if !bytes.Equal(rLocals, oLocals) {
		return fmt.Errorf("locals changed")
	}
	g, tick, l := uleb(uint64(b.budget)), uleb(uint64(b.tick)), uleb(uint64(scratch))
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	spent := join([]byte{0x23}, g, []byte{0x41, 0x00, 0x4c, 0x04, 0x40, 0x10}, tick, []byte{0x0b})
	payment := func(w uint32) []byte {
		return join([]byte{0x23}, g, []byte{0x41}, sleb(int64(w)), []byte{0x6b, 0x24}, g, spent)
	}
	lengthPayment := func(shift byte) []byte {
		return join([]byte{0x22}, l, []byte{0x23}, g, []byte{0x20}, l, []byte{0x41, shift, 0x76, 0x6b, 0x24}, g, spent)
	}
	var flat []byte
	for _, in := range rCode {
		flat = append(flat, in.bytes...)
	}
	// Build the expected body from the original and compare byte for byte. A loop pays for its
	// body less the loops nested in it; the entry for the code outside every loop.
	instrStart := len(oLocals)
	offsets := make([]int, len(oCode))
	offset := instrStart
	for i, in := range oCode {
		offsets[i] = offset
		offset += len(in.bytes)
	}
	type open struct{ i, inner int }
	var stack []open
	own := map[int]int{} // a loop's index in oCode -> its own bytes
	outside := len(original) - instrStart
	for i, in := range oCode {
		switch in.kind {
		case loopStart, blockStart:
			stack = append(stack, open{i, 0})
		case blockEnd:
			if len(stack) == 0 {
				continue
			}
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if oCode[o.i].kind != loopStart {
				continue
			}
			whole := offsets[i] + len(in.bytes) - offsets[o.i]
			own[o.i] = offsets[i] - (offsets[o.i] + len(oCode[o.i].bytes)) - o.inner
			for k := len(stack) - 1; k >= -1; k-- {
				if k == -1 {
					outside -= whole
				} else if oCode[stack[k].i].kind == loopStart {
					stack[k].inner += whole
				} else {
					continue
				}
				break
			}
		}
	}
	want := payment(1 + uint32(outside/bytesPerUnit))
	for i, in := range oCode {
		switch in.kind {
		case memoryBulk:
			want = append(want, lengthPayment(unitShift)...)
		case tableBulk:
			want = append(want, lengthPayment(tableShift)...)
		}
		want = append(want, in.bytes...)
		if in.kind == loopStart {
			want = append(want, payment(1+uint32(own[i]/bytesPerUnit))...)
		}
	}
	if !bytes.Equal(flat, want) {
		return fmt.Errorf("the instructions are not the original's with the payments")
	}
	return nil
}

func TestBudgetRewriteOfTheBundledModule(t *testing.T) {
	parsed, err := parseComponent(component)
	if err != nil {
		t.Fatal(err)
	}
	b, err := withBudget(parsed.core)
	if err != nil {
		t.Fatalf("the bundled core module is not rewritten: %v", err)
	}
	checkInsertsOnly(t, parsed.core, b)
	if ev := testEvaluator(t); ev.Checks() != ChecksAuto {
		t.Fatalf("the bundled component runs with %s", ev.Checks())
	}
	t.Logf("%d bytes -> %d bytes", len(parsed.core), len(b.module))
}

func TestBudgetRewriteOfHostileModules(t *testing.T) {
	for name, m := range map[string][]byte{
		"loop":      evaluatorModule(hostileIface, "0.2.0", "1", loopForever).bytes(),
		"fan-out":   fanOut().bytes(),
		"fill loop": evaluatorModule(hostileIface, "0.2.0", "1", fillForever).bytes(),
		"long loop": evaluatorModule(hostileIface, "0.2.0", "1", longLoop).bytes(),
		"table ops": evaluatorModule(hostileIface, "0.2.0", "1", tableOps).bytes(),
	} {
		t.Run(name, func(t *testing.T) {
			b, err := withBudget(m)
			if err != nil {
				t.Fatal(err)
			}
			checkInsertsOnly(t, m, b)
		})
	}
}

// table.fill, table.copy and table.init pay by entries: a module with one of each compiles and
// runs with the budget (the hostile module has no table: it traps, as the original does).
var tableOps = func() []byte {
	var b []byte
	for _, op := range [][]byte{{0xfc, 17, 0}, {0xfc, 14, 0, 0}, {0xfc, 12, 0, 0}} {
		b = append(b, i32const(0)...)
		if op[1] == 17 {
			b = append(b, 0xd0, 0x70) // ref.null func
		} else {
			b = append(b, i32const(0)...)
		}
		b = append(append(b, i32const(0)...), op...)
	}
	return append(b, i32const(0)...)
}()

// What the rewrite does not read leaves the module to wazero's checks: errNotRewritten, never
// a panic.
func TestBudgetRewriteRefusesWhatItCannotRead(t *testing.T) {
	good := evaluatorModule(hostileIface, "0.2.0", "1", loopForever)
	withImport := good
	withImport.importFunc = true
	body := func(b []byte) []byte { return evaluatorModule(hostileIface, "0.2.0", "1", b).bytes() }
	cases := map[string][]byte{
		"an import":                 withImport.bytes(),
		"SIMD":                      body(simdThenLoop),
		"a tail call":               body([]byte{0x12, 0x01}),
		"an atomic":                 body([]byte{0x41, 0x00, 0xfe, 0x10, 0x02, 0x00, 0x1a, 0x41, 0x00}),
		"try_table":                 body([]byte{0x1f, 0x40, 0x00, 0x0b, 0x41, 0x00}),
		"a typed reference":         body([]byte{0xd0, 0x63, 0x00, 0x1a, 0x41, 0x00}),
		"a second memory (memarg)":  body([]byte{0x41, 0x00, 0x28, 0x42, 0x01, 0x00, 0x41, 0x00}),
		"a body that does not end":  body([]byte{0x03, 0x40, 0x0c, 0x00}),
		"an unknown 0xfc operation": body([]byte{0xfc, 0x30, 0x41, 0x00}),
		"not a module":              []byte("\x00asm\x0d\x00\x01\x00"),
		"empty":                     nil,
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := withBudget(m); !errors.Is(err, errNotRewritten) {
				t.Fatalf("%v, want errNotRewritten", err)
			}
		})
	}
	// A module cut short anywhere: refused, or (cut at a section's end) rewritten faithfully.
	m := body(fillForever)
	for cut := 0; cut < len(m); cut++ {
		if b, err := withBudget(m[:cut]); err == nil {
			checkInsertsOnly(t, m[:cut], b)
		} else if !errors.Is(err, errNotRewritten) {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
}

// Any bytes: the rewrite never panics; what it rewrites keeps the original's instructions in
// order with the payments; and what wazero compiles as the original, it compiles rewritten.
func FuzzBudgetRewrite(f *testing.F) {
	f.Add(evaluatorModule(hostileIface, "0.2.0", "1", loopForever).bytes())
	f.Add(evaluatorModule(hostileIface, "0.2.0", "1", fillForever).bytes())
	f.Add(evaluatorModule(hostileIface, "0.2.0", "1", tableOps).bytes())
	f.Add(fanOut().bytes())
	f.Fuzz(func(t *testing.T, m []byte) {
		b, err := withBudget(m)
		if err != nil {
			if !errors.Is(err, errNotRewritten) {
				t.Fatalf("%v", err)
			}
			return
		}
		ctx := context.Background()
		r := wazero.NewRuntime(ctx)
		defer r.Close(ctx)
		if _, err := r.CompileModule(ctx, m); err != nil {
			return
		}
		checkInsertsOnly(t, m, b)
		if _, err := r.CompileModule(ctx, b.module); err != nil {
			t.Fatalf("the original compiles, the rewritten module does not: %v", err)
		}
	})
}
