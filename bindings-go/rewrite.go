package scaleunits

import (
	"encoding/binary"
	"errors"
)

// The deadline checks this module compiles into a core module in place of wazero's own
// (DECISIONS.md, "Deadlines cost CPU on wazero").
//
// wazero's WithCloseOnContextDone makes every loop iteration leave the compiled code for Go,
// which asks whether the module was closed: on the evaluator about 9 600 exits a decision,
// most of its cost. This rewrite gives the module a budget instead, a global of its own:
//
//   - every function entry and every loop header pays for the code it starts: one unit, and
//     one for each bytesPerUnit bytes of the function's code outside its loops, or of the
//     loop's body less the loops nested in it (those pay for themselves);
//   - memory.copy, memory.fill and memory.init pay one unit for each bytesPerUnit bytes they
//     move, table.copy, table.fill and table.init one for each 4 entries, read from their
//     length operand before they run;
//   - when the budget is spent the code calls a function of its own, the tick, whose
//     listener (in Go) checks the call's context, stops the call when the context has ended,
//     and otherwise refills the budget.
//
// Every instruction lies in one such stretch of code, a function's or a loop's, and within one
// entry or one iteration it runs at most once (a branch back is a loop's, which pays again;
// a call pays at the callee's entry). So a stretch of compiled code between two visits to Go
// runs at most about
// tickBudget × bytesPerUnit bytes of instructions, plus bulk operations of at most
// tickBudget × bytesPerUnit bytes, however the module loops or recurses: a loop that never
// ends, a recursion that fans out without a loop, a loop around a large memory.fill. Each
// instruction other than the bulk ones, memory.grow and table.grow (which wazero runs in Go)
// takes a bounded time, so the time between two checks is bounded too.
//
// The rewrite inserts instructions and nothing else: no index the module uses moves (the
// budget is a new last global, the tick a new last function of a new last type, a scratch
// local a new last local of the functions with a bulk operation), every byte of the original
// is kept in order, and wazero validates the result as it would the original. A module the
// rewrite does not fully decode (an import, a type that is not a plain function type, an
// instruction outside MVP, sign extension, saturating truncation, bulk memory and reference
// types: SIMD, tail calls, exceptions, atomics) is not rewritten: it runs with wazero's
// own check on every loop iteration instead.

const (
	// tickBudget is the budget refilled at each tick.
	tickBudget = 1 << 20
	// bytesPerUnit is how many bytes of code, or of memory a bulk operation moves, one unit pays for.
	bytesPerUnit = 16
	// unitShift is log2(bytesPerUnit), the shift applied to a memory operation's length.
	unitShift = 4
	// tableShift is the shift applied to a table operation's length (4 entries a unit).
	tableShift = 2
)

// errNotRewritten: the module holds something the rewrite does not decode; it keeps wazero's
// checks.
var errNotRewritten = errors.New("not rewritten")

// budgeted is a core module with the budget and the tick compiled in.
type budgeted struct {
	module []byte
	tick   uint32 // the tick's function index
	budget uint32 // the budget's global index
}

// withBudget rewrites a core module as described above.
func withBudget(core []byte) (*budgeted, error) {
	if len(core) < len(modulePreamble) || string(core[:8]) != string(modulePreamble) {
		return nil, errNotRewritten
	}
	type part struct {
		id   byte
		body []byte
	}
	var parts []part
	r := reader{b: core, pos: 8}
	for !r.done() {
		id, err := r.byte()
		if err != nil {
			return nil, errNotRewritten
		}
		size, err := r.u32()
		if err != nil {
			return nil, errNotRewritten
		}
		body, err := r.bytes(int(size))
		if err != nil {
			return nil, errNotRewritten
		}
		parts = append(parts, part{id, body})
	}
	var types, funcs, globals, code []byte
	for _, p := range parts {
		switch p.id {
		case 1:
			types = p.body
		case 2:
			// The evaluator imports nothing (New refuses imports); an import would move the
			// indices the rewrite appends after.
			return nil, errNotRewritten
		case 3:
			funcs = p.body
		case 6:
			globals = p.body
		case 10:
			code = p.body
		}
	}
	if code == nil || funcs == nil {
		return nil, errNotRewritten
	}
	params, err := paramCounts(types)
	if err != nil {
		return nil, err
	}
	funcTypes, err := u32s(funcs)
	if err != nil {
		return nil, err
	}
	for _, t := range funcTypes {
		if int(t) >= len(params) {
			return nil, errNotRewritten
		}
	}
	globalCount, globalEntries, err := vecHead(globals)
	if err != nil {
		return nil, err
	}
	typeCount := uint32(len(params))
	funcCount := uint32(len(funcTypes))
	b := &budgeted{budget: globalCount, tick: funcCount}
	newCode, err := rewriteCode(code, funcTypes, params, b)
	if err != nil {
		return nil, err
	}
	// The tick: () -> (), refills the budget; its listener is the check.
	tickBody := []byte{0x00, 0x41}
	tickBody = append(tickBody, sleb(tickBudget)...)
	tickBody = append(tickBody, 0x24)
	tickBody = append(tickBody, uleb(uint64(b.budget))...)
	tickBody = append(tickBody, 0x0b)
	newCode = append(newCode, uleb(uint64(len(tickBody)))...)
	newCode = append(newCode, tickBody...)

	_, typeEntries, _ := vecHead(types)
	newTypes := append(uleb(uint64(typeCount+1)), typeEntries...)
	newTypes = append(newTypes, 0x60, 0x00, 0x00)
	_, funcEntries, _ := vecHead(funcs)
	newFuncs := append(uleb(uint64(funcCount+1)), funcEntries...)
	newFuncs = append(newFuncs, uleb(uint64(typeCount))...)
	newGlobals := append(uleb(uint64(globalCount+1)), globalEntries...)
	newGlobals = append(newGlobals, 0x7f, 0x01, 0x41)
	newGlobals = append(newGlobals, sleb(tickBudget)...)
	newGlobals = append(newGlobals, 0x0b)

	out := append(make([]byte, 0, len(core)+len(core)/4), modulePreamble...)
	put := func(id byte, body []byte) { out = append(out, section(id, body)...) }
	wroteTypes, wroteGlobals := false, false
	for _, p := range parts {
		// A section the rewrite adds goes where the binary format orders it.
		if !wroteTypes && p.id != 0 && p.id != 1 {
			put(1, newTypes)
			wroteTypes = true
		}
		if !wroteGlobals && p.id != 0 && order(p.id) > order(6) {
			put(6, newGlobals)
			wroteGlobals = true
		}
		switch p.id {
		case 1:
			put(1, newTypes)
			wroteTypes = true
		case 3:
			put(3, newFuncs)
		case 6:
			put(6, newGlobals)
			wroteGlobals = true
		case 10:
			put(10, newCode)
		default:
			put(p.id, p.body)
		}
	}
	b.module = out
	return b, nil
}

// order is a known section's place in a module: the tag section (13) sits before globals (6),
// data count (12) before code (10).
func order(id byte) int {
	switch id {
	case 13:
		return 55
	case 12:
		return 95
	default:
		return int(id) * 10
	}
}

// vecHead reads a vector's count and returns its entries undecoded (an absent section is empty).
func vecHead(body []byte) (uint32, []byte, error) {
	if body == nil {
		return 0, nil, nil
	}
	r := reader{b: body}
	n, err := r.u32()
	if err != nil {
		return 0, nil, errNotRewritten
	}
	return n, body[r.pos:], nil
}

// u32s reads a vector of u32 (the function section's type indices).
func u32s(body []byte) ([]uint32, error) {
	r := reader{b: body}
	n, err := r.u32()
	if err != nil || int(n) > len(body) {
		return nil, errNotRewritten
	}
	out := make([]uint32, n)
	for i := range out {
		if out[i], err = r.u32(); err != nil {
			return nil, errNotRewritten
		}
	}
	if !r.done() {
		return nil, errNotRewritten
	}
	return out, nil
}

// paramCounts reads the type section, each entry of which must be a plain function type
// (0x60; a recursive group or a subtype would change what a new type's index means), and
// returns each type's parameter count.
func paramCounts(body []byte) ([]uint32, error) {
	if body == nil {
		return nil, nil
	}
	r := reader{b: body}
	n, err := r.u32()
	if err != nil || int(n) > len(body) {
		return nil, errNotRewritten
	}
	out := make([]uint32, n)
	for i := range out {
		form, err := r.byte()
		if err != nil || form != 0x60 {
			return nil, errNotRewritten
		}
		for part := range 2 { // parameters, results
			count, err := r.u32()
			if err != nil {
				return nil, errNotRewritten
			}
			for range count {
				t, err := r.byte()
				if err != nil || !valueType(t) {
					return nil, errNotRewritten
				}
			}
			if part == 0 {
				out[i] = count
			}
		}
	}
	if !r.done() {
		return nil, errNotRewritten
	}
	return out, nil
}

// valueType: i32, i64, f32, f64, v128, funcref, externref.
func valueType(t byte) bool {
	switch t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return true
	}
	return false
}

// rewriteCode rewrites every function body and leaves room for the tick's.
func rewriteCode(code []byte, funcTypes, params []uint32, b *budgeted) ([]byte, error) {
	r := reader{b: code}
	n, err := r.u32()
	if err != nil || int(n) != len(funcTypes) {
		return nil, errNotRewritten
	}
	out := append(make([]byte, 0, len(code)+len(code)/4), uleb(uint64(n+1))...)
	for i := range n {
		size, err := r.u32()
		if err != nil {
			return nil, errNotRewritten
		}
		body, err := r.bytes(int(size))
		if err != nil {
			return nil, errNotRewritten
		}
		body, err = rewriteBody(body, params[funcTypes[i]], b)
		if err != nil {
			return nil, err
		}
		out = append(out, uleb(uint64(len(body)))...)
		out = append(out, body...)
	}
	if !r.done() {
		return nil, errNotRewritten
	}
	return out, nil
}

// Kinds of instruction the rewrite acts on.
const (
	plain      = iota
	loopStart  // loop: pays for its body at each iteration
	blockStart // block, if: only for matching ends
	blockEnd   // end
	memoryBulk // memory.copy, memory.fill, memory.init: pay for the length on top of the stack
	tableBulk  // table.copy, table.fill, table.init: the same, by entries
)

// instruction is one decoded instruction: where it is in the body and what the rewrite does.
type instruction struct {
	start, end int
	kind       int
	weight     uint32 // a loop's payment, once its end is found
}

// rewriteBody copies a function body with the payments described above.
func rewriteBody(body []byte, params uint32, b *budgeted) ([]byte, error) {
	r := reader{b: body}
	groups, err := r.u32()
	if err != nil || int(groups) > len(body) {
		return nil, errNotRewritten
	}
	groupsEnd := r.pos
	locals := uint64(params)
	for range groups {
		n, err := r.u32()
		if err != nil {
			return nil, errNotRewritten
		}
		t, err := r.byte()
		if err != nil || !valueType(t) {
			return nil, errNotRewritten
		}
		locals += uint64(n)
	}
	if locals >= 1<<32-1 {
		return nil, errNotRewritten
	}
	localsEnd := r.pos
	var code []instruction
	var open []int // indices into code of the blocks, loops and ifs not yet ended
	// The bytes of the loops nested directly in each open loop (and, first, in the function):
	// a loop's payment, and the entry's, leave those out, as they pay for themselves.
	nested := []int{0}
	bulk, ended := false, false
	for !r.done() {
		start := r.pos
		op, _ := r.byte()
		kind, err := decode(&r, op)
		if err != nil {
			return nil, err
		}
		in := instruction{start: start, end: r.pos, kind: kind}
		switch kind {
		case loopStart:
			open = append(open, len(code))
			nested = append(nested, 0)
		case blockStart:
			open = append(open, len(code))
		case blockEnd:
			if len(open) == 0 { // the function's own end: the last instruction
				if !r.done() {
					return nil, errNotRewritten
				}
				ended = true
				break
			}
			opened := &code[open[len(open)-1]]
			open = open[:len(open)-1]
			if opened.kind == loopStart {
				inner := nested[len(nested)-1]
				nested = nested[:len(nested)-1]
				opened.weight = units(start - opened.end - inner)
				nested[len(nested)-1] += r.pos - opened.start
			}
		case memoryBulk, tableBulk:
			bulk = true
		}
		code = append(code, in)
	}
	if !ended {
		return nil, errNotRewritten
	}
	scratch := uint32(locals)
	out := make([]byte, 0, len(body)+len(body)/4+64)
	if bulk {
		out = append(out, uleb(uint64(groups)+1)...)
		out = append(out, body[groupsEnd:localsEnd]...)
		out = append(out, 0x01, 0x7f) // one more i32: the scratch local
	} else {
		out = append(out, body[:localsEnd]...)
	}
	out = b.pay(out, units(len(body)-localsEnd-nested[0]))
	for _, in := range code {
		switch in.kind {
		case memoryBulk:
			out = b.payLength(out, scratch, unitShift)
		case tableBulk:
			out = b.payLength(out, scratch, tableShift)
		}
		out = append(out, body[in.start:in.end]...)
		if in.kind == loopStart {
			out = b.pay(out, in.weight)
		}
	}
	return out, nil
}

// units is the payment for n bytes of code: at least one unit.
func units(n int) uint32 { return 1 + uint32(n/bytesPerUnit) }

// pay appends: budget -= w; if budget <= 0 { tick() }.
//
//	global.get $budget; i32.const w; i32.sub; global.set $budget
//	global.get $budget; i32.const 0; i32.le_s; if; call $tick; end
func (b *budgeted) pay(out []byte, w uint32) []byte {
	g := uleb(uint64(b.budget))
	out = append(append(out, 0x23), g...)
	out = append(append(out, 0x41), sleb(int64(w))...)
	out = append(append(append(out, 0x6b, 0x24), g...), 0x23)
	out = append(out, g...)
	return b.tickIfSpent(out)
}

// payLength appends, before a bulk operation whose length (i32) is on top of the stack:
// budget -= length >> shift; if budget <= 0 { tick() }. The length stays on the stack.
//
//	local.tee $scratch; global.get $budget; local.get $scratch; i32.const shift; i32.shr_u
//	i32.sub; global.set $budget; global.get $budget; i32.const 0; i32.le_s; if; call $tick; end
func (b *budgeted) payLength(out []byte, scratch uint32, shift byte) []byte {
	g, l := uleb(uint64(b.budget)), uleb(uint64(scratch))
	out = append(append(out, 0x22), l...)
	out = append(append(out, 0x23), g...)
	out = append(append(out, 0x20), l...)
	out = append(out, 0x41, shift, 0x76, 0x6b, 0x24)
	out = append(append(out, g...), 0x23)
	out = append(out, g...)
	return b.tickIfSpent(out)
}

// tickIfSpent appends, with the budget on the stack: i32.const 0; i32.le_s; if; call $tick; end.
func (b *budgeted) tickIfSpent(out []byte) []byte {
	out = append(out, 0x41, 0x00, 0x4c, 0x04, 0x40, 0x10)
	out = append(out, uleb(uint64(b.tick))...)
	return append(out, 0x0b)
}

// decode steps over one instruction's immediates and says what kind it is; an instruction it
// does not know is errNotRewritten.
func decode(r *reader, op byte) (int, error) {
	switch {
	case op == 0x00, op == 0x01, op == 0x05, op == 0x0f, op == 0x1a, op == 0x1b,
		op == 0xd1, op >= 0x45 && op <= 0xc4:
		return plain, nil // no immediate
	case op == 0x0b:
		return blockEnd, nil
	case op == 0x02, op == 0x04:
		return blockStart, skipBlockType(r)
	case op == 0x03:
		return loopStart, skipBlockType(r)
	case op == 0x0c, op == 0x0d, op == 0x10, op >= 0x20 && op <= 0x26, op == 0xd2, op == 0x41:
		return plain, skipLEB(r, 5)
	case op == 0x0e: // br_table: a vector of labels and a default
		n, err := r.u32()
		if err != nil || int(n) > len(r.b)-r.pos {
			return 0, errNotRewritten
		}
		for range uint64(n) + 1 {
			if err := skipLEB(r, 5); err != nil {
				return 0, err
			}
		}
		return plain, nil
	case op == 0x11: // call_indirect: type, table
		if err := skipLEB(r, 5); err != nil {
			return 0, err
		}
		return plain, skipLEB(r, 5)
	case op == 0x1c: // select with types
		n, err := r.u32()
		if err != nil {
			return 0, errNotRewritten
		}
		for range n {
			t, err := r.byte()
			if err != nil || !valueType(t) {
				return 0, errNotRewritten
			}
		}
		return plain, nil
	case op >= 0x28 && op <= 0x3e: // loads and stores: alignment, offset
		align, err := r.u32()
		if err != nil || align >= 64 { // bit 6 would name a memory (multi-memory)
			return 0, errNotRewritten
		}
		return plain, skipLEB(r, 5)
	case op == 0x3f, op == 0x40: // memory.size, memory.grow: memory 0
		return plain, zeroByte(r)
	case op == 0x42:
		return plain, skipLEB(r, 10)
	case op == 0x43, op == 0x44: // f32.const, f64.const
		if _, err := r.bytes(4 << (op - 0x43)); err != nil {
			return 0, errNotRewritten
		}
		return plain, nil
	case op == 0xd0: // ref.null: funcref or externref
		t, err := r.byte()
		if err != nil || (t != 0x70 && t != 0x6f) {
			return 0, errNotRewritten
		}
		return plain, nil
	case op == 0xfc:
		sub, err := r.u32()
		if err != nil {
			return 0, errNotRewritten
		}
		switch {
		case sub <= 7: // saturating truncations
			return plain, nil
		case sub == 8: // memory.init: data, memory 0
			if err := skipLEB(r, 5); err != nil {
				return 0, err
			}
			return memoryBulk, zeroByte(r)
		case sub == 9, sub == 13, sub == 15, sub == 16: // data.drop, elem.drop, table.grow, table.size
			return plain, skipLEB(r, 5)
		case sub == 10: // memory.copy: memory 0 to memory 0
			if err := zeroByte(r); err != nil {
				return 0, err
			}
			return memoryBulk, zeroByte(r)
		case sub == 11: // memory.fill
			return memoryBulk, zeroByte(r)
		case sub == 12, sub == 14: // table.init, table.copy
			if err := skipLEB(r, 5); err != nil {
				return 0, err
			}
			return tableBulk, skipLEB(r, 5)
		case sub == 17: // table.fill
			return tableBulk, skipLEB(r, 5)
		}
	}
	return 0, errNotRewritten
}

// skipBlockType steps over a block type: empty (0x40), one value type, or a type index (s33).
func skipBlockType(r *reader) error {
	b, err := r.byte()
	if err != nil {
		return errNotRewritten
	}
	switch {
	case b == 0x40, valueType(b), b < 0x40:
		return nil
	case b&0x80 != 0: // a type index of more than one byte
		r.pos--
		return skipLEB(r, 5)
	}
	return errNotRewritten
}

// skipLEB steps over a LEB128 number of at most max bytes.
func skipLEB(r *reader, max int) error {
	for range max {
		b, err := r.byte()
		if err != nil {
			return errNotRewritten
		}
		if b&0x80 == 0 {
			return nil
		}
	}
	return errNotRewritten
}

func zeroByte(r *reader) error {
	b, err := r.byte()
	if err != nil || b != 0 {
		return errNotRewritten
	}
	return nil
}

func uleb(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func sleb(v int64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func section(id byte, body []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(body)))...), body...)
}
