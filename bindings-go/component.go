package scaleunits

import (
	"encoding/binary"
	"fmt"
)

// The preamble of a WebAssembly component binary: the magic, version 0x0d and layer 1.
var componentPreamble = []byte{0x00, 'a', 's', 'm', 0x0d, 0x00, 0x01, 0x00}

// The preamble of a core WebAssembly module: the magic, version 1, layer 0.
var modulePreamble = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// Section ids of the component binary format that this loader looks at.
const (
	sectionCustom        = 0
	sectionCoreModule    = 1
	sectionCoreInstance  = 2
	sectionCoreType      = 3
	sectionComponent     = 4
	sectionInstance      = 5
	sectionAlias         = 6
	sectionType          = 7
	sectionCanon         = 8
	sectionStart         = 9
	sectionImport        = 10
	sectionExport        = 11
	sectionValue         = 12
	maxKnownComponentSec = sectionValue
)

// parsedComponent is what the loader needs from a component binary: its one core module and
// the names the component exports.
type parsedComponent struct {
	core    []byte
	exports []string
}

// parseComponent reads the top-level sections of a component binary, every read bounds-checked.
// It requires exactly one core module, no nested component, no import and no start function:
// the evaluator's component imports nothing and holds one core module.
func parseComponent(b []byte) (*parsedComponent, error) {
	if len(b) < len(componentPreamble) {
		return nil, invalidComponent("%d bytes is shorter than a component preamble", len(b))
	}
	if string(b[:4]) != string(componentPreamble[:4]) {
		return nil, invalidComponent("not a WebAssembly binary (no \\0asm magic)")
	}
	if string(b[:8]) == string(modulePreamble) {
		return nil, invalidComponent("a core module, not a component")
	}
	if string(b[:8]) != string(componentPreamble) {
		return nil, invalidComponent("unsupported binary version or layer % x", b[4:8])
	}
	out := &parsedComponent{}
	r := reader{b: b, pos: 8}
	for !r.done() {
		start := r.pos
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("section %d at offset %d: %w", id, start, err)
		}
		body, err := r.bytes(int(size))
		if err != nil {
			return nil, invalidComponent("section %d at offset %d: %d bytes announced, %d left", id, start, size, len(b)-r.pos)
		}
		switch id {
		case sectionCoreModule:
			if out.core != nil {
				return nil, invalidComponent("more than one core module")
			}
			if len(body) < len(modulePreamble) || string(body[:8]) != string(modulePreamble) {
				return nil, invalidComponent("the core module section does not hold a core module")
			}
			out.core = body
		case sectionComponent:
			// wit-component wraps an exported interface with types in a nested component that
			// holds types and lifted functions only: it may hold no core module of its own.
			if err := checkNested(body, 1); err != nil {
				return nil, err
			}
		case sectionImport:
			names, err := externNames(body, skipExternDesc)
			if err != nil {
				return nil, err
			}
			if len(names) > 0 {
				return nil, loadError(ErrImports, "the component imports %q; the evaluator must import nothing", names)
			}
		case sectionStart:
			return nil, invalidComponent("a start function")
		case sectionExport:
			names, err := externNames(body, skipExportTail)
			if err != nil {
				return nil, err
			}
			out.exports = append(out.exports, names...)
		default:
			if id > maxKnownComponentSec {
				return nil, invalidComponent("unknown section id %d at offset %d", id, start)
			}
		}
	}
	if out.core == nil {
		return nil, invalidComponent("no core module")
	}
	return out, nil
}

// maxNesting bounds how deep nested components are followed.
const maxNesting = 8

// checkNested walks a nested component and refuses any core module or start function in it.
func checkNested(b []byte, depth int) error {
	if depth > maxNesting {
		return invalidComponent("components nested more than %d deep", maxNesting)
	}
	if len(b) < len(componentPreamble) || string(b[:8]) != string(componentPreamble) {
		return invalidComponent("a nested component without a component preamble")
	}
	r := reader{b: b, pos: 8}
	for !r.done() {
		start := r.pos
		id, err := r.byte()
		if err != nil {
			return err
		}
		size, err := r.u32()
		if err != nil {
			return err
		}
		body, err := r.bytes(int(size))
		if err != nil {
			return invalidComponent("nested section %d at offset %d: %d bytes announced, %d left", id, start, size, len(b)-r.pos)
		}
		switch {
		case id == sectionCoreModule:
			return invalidComponent("a core module inside a nested component (the evaluator holds one core module only)")
		case id == sectionStart:
			return invalidComponent("a start function in a nested component")
		case id == sectionComponent:
			if err := checkNested(body, depth+1); err != nil {
				return err
			}
		case id > maxKnownComponentSec:
			return invalidComponent("unknown section id %d in a nested component", id)
		}
	}
	return nil
}

// externNames reads the names of an import or export section: a vector of entries, each an
// extern name (0x00 or 0x01, then a name) followed by the rest of the entry, which tail skips.
func externNames(body []byte, tail func(*reader) error) ([]string, error) {
	r := reader{b: body}
	count, err := r.u32()
	if err != nil {
		return nil, err
	}
	if int(count) > len(body) {
		return nil, invalidComponent("%d entries announced in %d bytes", count, len(body))
	}
	names := make([]string, 0, count)
	for range count {
		kind, err := r.byte()
		if err != nil {
			return nil, err
		}
		if kind != 0x00 && kind != 0x01 {
			return nil, invalidComponent("unknown extern name kind 0x%02x", kind)
		}
		name, err := r.name()
		if err != nil {
			return nil, err
		}
		if kind == 0x01 { // an older encoding carried a version suffix string after the name
			if _, err := r.name(); err != nil {
				return nil, err
			}
		}
		names = append(names, name)
		if err := tail(&r); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// skipExportTail skips what follows an export's name: a sort and an index, then an optional
// type (0x00, or 0x01 and an extern descriptor).
func skipExportTail(r *reader) error {
	sort, err := r.byte()
	if err != nil {
		return err
	}
	if sort == 0x00 { // a core sort carries one more byte
		if _, err := r.byte(); err != nil {
			return err
		}
	}
	if _, err := r.u32(); err != nil { // index
		return err
	}
	has, err := r.byte()
	if err != nil {
		return err
	}
	switch has {
	case 0x00:
		return nil
	case 0x01:
		return skipExternDesc(r)
	default:
		return invalidComponent("bad optional type marker 0x%02x in an export", has)
	}
}

// skipExternDesc skips an extern descriptor.
func skipExternDesc(r *reader) error {
	kind, err := r.byte()
	if err != nil {
		return err
	}
	switch kind {
	case 0x00: // core module: 0x11 and a type index
		if _, err := r.byte(); err != nil {
			return err
		}
		_, err = r.u32()
		return err
	case 0x01, 0x02, 0x04, 0x05: // func, value (bound), component, instance: a type index
		if kind == 0x02 {
			return invalidComponent("value exports are not supported")
		}
		_, err = r.u32()
		return err
	case 0x03: // type bound: 0x00 index (eq) or 0x01 (sub resource)
		b, err := r.byte()
		if err != nil {
			return err
		}
		if b == 0x00 {
			_, err = r.u32()
		}
		return err
	default:
		return invalidComponent("unknown extern descriptor 0x%02x", kind)
	}
}

// reader reads a byte slice with every read bounds-checked.
type reader struct {
	b   []byte
	pos int
}

func (r *reader) done() bool { return r.pos >= len(r.b) }

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, invalidComponent("unexpected end at offset %d", r.pos)
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.pos {
		return nil, invalidComponent("%d bytes wanted at offset %d, %d left", n, r.pos, len(r.b)-r.pos)
	}
	out := r.b[r.pos : r.pos+n]
	r.pos += n
	return out, nil
}

// u32 reads an unsigned LEB128 number of at most 5 bytes that fits 32 bits.
func (r *reader) u32() (uint32, error) {
	v, n := binary.Uvarint(r.b[r.pos:min(len(r.b), r.pos+5)])
	if n <= 0 || v > 0xffff_ffff {
		return 0, invalidComponent("malformed LEB128 number at offset %d", r.pos)
	}
	r.pos += n
	return uint32(v), nil
}

func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(int(n))
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func invalidComponent(format string, args ...any) error {
	return loadError(ErrInvalidComponent, format, args...)
}
