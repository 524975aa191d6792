package scaleunits

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"
)

// The canonical ABI layouts this module reads (component model, canonical ABI; pinned by
// abi_test.go). All offsets are bytes from a return pointer in the guest's memory.
const (
	// string: pointer, length (4 + 4 bytes, align 4).
	stringSize = 8
	// result<record { string } | record { string, string }, evaluation-error>: a u8
	// discriminant, then at offset 4 the payload. The error record is `code` (an enum of 12
	// cases, one byte) at 4, `message` at 8, `path` at 16: 24 bytes in all.
	resultPayload   = 4
	errorCodeOffset = 4
	errorMessageOff = 8
	errorPathOff    = 16
	resultSize      = 24
	// diagnosis: `faults` (list<fault>) at 0, `omitted` (u64) at 8: 16 bytes, align 8.
	diagnosisOmittedOff = 8
	diagnosisAlign      = 8
	// fault: `code` at 0, `message` at 4, `path` at 12, `hint` at 20: 28 bytes, align 4.
	faultSize = 28
	// evaluator-info: three strings.
	infoSize = 24
)

// errorCodes are the WIT `error-code` cases in their order: the discriminant indexes it.
var errorCodes = AllErrorCodes

// instance is one instantiation of the core module: not goroutine-safe; the pool hands it
// to one call at a time.
type instance struct {
	mod     api.Module
	kind    int // checkedKind or plainKind
	memory  api.Memory
	realloc api.Function
	funcs   map[string]api.Function
	posts   map[string]api.Function
	broken  bool
}

func (in *instance) close() { _ = in.mod.Close(context.Background()) }

// guestFault marks the instance broken and describes what the guest did.
func (in *instance) guestFault(ctx context.Context, function, message string, err error) error {
	in.broken = true
	if ctx.Err() != nil {
		return &GuestError{Function: function, Message: "stopped by its context", Err: ctx.Err()}
	}
	var stop stopped
	if errors.As(err, &stop) { // the deadline read from the clock before the context's timer ran
		return &GuestError{Function: function, Message: "stopped by its context", Err: stop.err}
	}
	return &GuestError{Function: function, Message: message, Err: err}
}

// invoke calls an export; a trap, an exit or a stopped context breaks the instance.
func (in *instance) invoke(ctx context.Context, function string, f api.Function, params ...uint64) ([]uint64, error) {
	results, err := f.Call(ctx, params...)
	if err != nil {
		return nil, in.guestFault(ctx, function, "trapped", err)
	}
	return results, nil
}

// lowerString copies s into memory the guest allocated with cabi_realloc (align 1).
func (in *instance) lowerString(ctx context.Context, function string, s []byte) (uint32, uint32, error) {
	ptr, err := in.alloc(ctx, function, 1, uint32(len(s)))
	if err != nil {
		return 0, 0, err
	}
	if !in.memory.Write(ptr, s) {
		return 0, 0, in.guestFault(ctx, function, fmt.Sprintf("cabi_realloc returned %#x, outside memory for %d bytes", ptr, len(s)), nil)
	}
	return ptr, uint32(len(s)), nil
}

// checkTexts refuses, before anything is allocated in the guest, text that cannot cross: a
// WIT string is UTF-8 and the guest's bindings may assume it without checking, so text that is
// not is refused here as JSON that cannot be read.
func checkTexts(texts [][]byte) error {
	for _, s := range texts {
		if uint64(len(s)) > 0xffff_ffff {
			return &Error{Code: CodeInvalidJSON, Message: "the text is larger than 4 GiB"}
		}
		if !utf8.Valid(s) {
			return &Error{Code: CodeInvalidJSON, Message: fmt.Sprintf("the text is not valid UTF-8 (at byte %d)", invalidUTF8At(s))}
		}
	}
	return nil
}

// invalidUTF8At returns the offset of the first byte that is not part of valid UTF-8.
func invalidUTF8At(s []byte) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(s)
}

func (in *instance) alloc(ctx context.Context, function string, align, size uint32) (uint32, error) {
	res, err := in.invoke(ctx, function, in.realloc, 0, 0, uint64(align), uint64(size))
	if err != nil {
		return 0, err
	}
	ptr := uint32(res[0])
	if ptr%align != 0 {
		return 0, in.guestFault(ctx, function, fmt.Sprintf("cabi_realloc returned %#x, not aligned to %d", ptr, align), nil)
	}
	return ptr, nil
}

// post calls cabi_post_<function> with the return pointer, when the component exports it.
func (in *instance) post(ctx context.Context, function string, ret uint32) error {
	if post := in.posts[function]; post != nil {
		if _, err := in.invoke(ctx, function, post, uint64(ret)); err != nil {
			return err
		}
	}
	return nil
}

// area returns size bytes at ptr, checking alignment and bounds: the guest's return pointer
// is untrusted.
func (in *instance) area(ctx context.Context, function string, ptr, size, align uint32) ([]byte, error) {
	if ptr%align != 0 {
		return nil, in.guestFault(ctx, function, fmt.Sprintf("return pointer %#x is not aligned to %d", ptr, align), nil)
	}
	b, ok := in.memory.Read(ptr, size)
	if !ok {
		return nil, in.guestFault(ctx, function, fmt.Sprintf("return area %#x+%d is outside memory (%d bytes)", ptr, size, in.memory.Size()), nil)
	}
	return b, nil
}

// liftString reads the (pointer, length) pair at area[off:] and copies the UTF-8 text it names.
func (in *instance) liftString(ctx context.Context, function string, area []byte, off int) (string, error) {
	ptr := binary.LittleEndian.Uint32(area[off:])
	n := binary.LittleEndian.Uint32(area[off+4:])
	b, ok := in.memory.Read(ptr, n)
	if !ok {
		return "", in.guestFault(ctx, function, fmt.Sprintf("string %#x+%d is outside memory (%d bytes)", ptr, n, in.memory.Size()), nil)
	}
	if !utf8.Valid(b) {
		return "", in.guestFault(ctx, function, fmt.Sprintf("string %#x+%d is not UTF-8", ptr, n), nil)
	}
	return string(b), nil
}

// liftError reads an evaluation-error record whose code byte is at area[off:].
func (in *instance) liftError(ctx context.Context, function string, area []byte, off int) (*Error, error) {
	code := area[off]
	if int(code) >= len(errorCodes) {
		return nil, in.guestFault(ctx, function, fmt.Sprintf("error code %d is not a WIT error-code", code), nil)
	}
	message, err := in.liftString(ctx, function, area, off+errorMessageOff-errorCodeOffset)
	if err != nil {
		return nil, err
	}
	path, err := in.liftString(ctx, function, area, off+errorPathOff-errorCodeOffset)
	if err != nil {
		return nil, err
	}
	return &Error{Code: errorCodes[code], Message: message, Path: path}, nil
}

// liftResult reads result<record of n strings, evaluation-error> from a 24-byte area.
func (in *instance) liftResult(ctx context.Context, function string, area []byte, strings int) ([]string, *Error, error) {
	switch area[0] {
	case 0:
		out := make([]string, strings)
		for i := range out {
			s, err := in.liftString(ctx, function, area, resultPayload+i*stringSize)
			if err != nil {
				return nil, nil, err
			}
			out[i] = s
		}
		return out, nil, nil
	case 1:
		e, err := in.liftError(ctx, function, area, errorCodeOffset)
		return nil, e, err
	default:
		return nil, nil, in.guestFault(ctx, function, fmt.Sprintf("result discriminant %d is neither ok (0) nor error (1)", area[0]), nil)
	}
}

// callStrings calls a function of string parameters that returns a pointer, and hands the
// return pointer to read, then calls the post-return function.
func (in *instance) callStrings(ctx context.Context, function string, args [][]byte, read func(ret uint32) error) error {
	if err := checkTexts(args); err != nil {
		return err
	}
	params := make([]uint64, 0, 2*len(args))
	for _, arg := range args {
		ptr, n, err := in.lowerString(ctx, function, arg)
		if err != nil {
			return err
		}
		params = append(params, uint64(ptr), uint64(n))
	}
	res, err := in.invoke(ctx, function, in.funcs[function], params...)
	if err != nil {
		return err
	}
	ret := uint32(res[0])
	if err := read(ret); err != nil {
		return err
	}
	return in.post(ctx, function, ret)
}

// resultCall calls a function returning result<record of n strings, evaluation-error>.
func (in *instance) resultCall(ctx context.Context, function string, n int, args ...[]byte) ([]string, error) {
	var out []string
	var evalErr *Error
	err := in.callStrings(ctx, function, args, func(ret uint32) error {
		area, err := in.area(ctx, function, ret, resultSize, 4)
		if err != nil {
			return err
		}
		out, evalErr, err = in.liftResult(ctx, function, area, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	if evalErr != nil {
		return nil, evalErr
	}
	return out, nil
}

// stringCall calls a function that returns a plain string (a return pointer to its pointer
// and length).
func (in *instance) stringCall(ctx context.Context, function string, args ...[]byte) (string, error) {
	var out string
	err := in.callStrings(ctx, function, args, func(ret uint32) error {
		area, err := in.area(ctx, function, ret, stringSize, 4)
		if err != nil {
			return err
		}
		out, err = in.liftString(ctx, function, area, 0)
		return err
	})
	return out, err
}

// info calls `info`.
func (in *instance) info(ctx context.Context, _ *Evaluator) (Info, error) {
	var info Info
	err := in.callStrings(ctx, "info", nil, func(ret uint32) error {
		area, err := in.area(ctx, "info", ret, infoSize, 4)
		if err != nil {
			return err
		}
		fields := []*string{&info.EvaluatorVersion, &info.SchemaVersion, &info.WITVersion}
		for i, f := range fields {
			if *f, err = in.liftString(ctx, "info", area, i*stringSize); err != nil {
				return err
			}
		}
		return nil
	})
	return info, err
}

// Fault is one fault of a diagnosis (WIT `fault`).
type Fault struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
	Path    string    `json:"path"`
	Hint    string    `json:"hint"`
}

// Diagnosis is every fault the evaluator finds in an input, in the order its checks run; at
// most 1000 are listed and Omitted counts the rest (DECISIONS.md, "Diagnosis").
type Diagnosis struct {
	Faults  []Fault `json:"faults"`
	Omitted uint64  `json:"omitted"`
}

// diagnose calls a function returning a diagnosis record.
func (in *instance) diagnose(ctx context.Context, function string, arg []byte) (*Diagnosis, error) {
	d := &Diagnosis{}
	err := in.callStrings(ctx, function, [][]byte{arg}, func(ret uint32) error {
		area, err := in.area(ctx, function, ret, 16, diagnosisAlign)
		if err != nil {
			return err
		}
		ptr := binary.LittleEndian.Uint32(area[0:])
		n := binary.LittleEndian.Uint32(area[4:])
		d.Omitted = binary.LittleEndian.Uint64(area[diagnosisOmittedOff:])
		if uint64(n)*faultSize > 0xffff_ffff {
			return in.guestFault(ctx, function, fmt.Sprintf("%d faults do not fit a 32-bit memory", n), nil)
		}
		list, err := in.area(ctx, function, ptr, n*faultSize, 4)
		if err != nil {
			return err
		}
		d.Faults = make([]Fault, n)
		for i := range d.Faults {
			item := list[i*faultSize : (i+1)*faultSize]
			e, err := in.liftError(ctx, function, item, 0)
			if err != nil {
				return err
			}
			hint, err := in.liftString(ctx, function, item, 20)
			if err != nil {
				return err
			}
			d.Faults[i] = Fault{Code: e.Code, Message: e.Message, Path: e.Path, Hint: hint}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// batch calls evaluate-batch-json: list<string> in, list<result<decision-json, evaluation-error>> out.
func (in *instance) batch(ctx context.Context, requests [][]byte) ([]BatchItem, error) {
	const function = "evaluate-batch-json"
	if uint64(len(requests))*stringSize > 0xffff_ffff {
		return nil, errors.New("scaleunits: batch too large")
	}
	if err := checkTexts(requests); err != nil {
		return nil, err
	}
	pairs := make([]byte, len(requests)*stringSize)
	for i, r := range requests {
		ptr, n, err := in.lowerString(ctx, function, r)
		if err != nil {
			return nil, err
		}
		binary.LittleEndian.PutUint32(pairs[i*stringSize:], ptr)
		binary.LittleEndian.PutUint32(pairs[i*stringSize+4:], n)
	}
	list, err := in.alloc(ctx, function, 4, uint32(len(pairs)))
	if err != nil {
		return nil, err
	}
	if !in.memory.Write(list, pairs) {
		return nil, in.guestFault(ctx, function, fmt.Sprintf("cabi_realloc returned %#x, outside memory for %d bytes", list, len(pairs)), nil)
	}
	res, err := in.invoke(ctx, function, in.funcs[function], uint64(list), uint64(len(requests)))
	if err != nil {
		return nil, err
	}
	ret := uint32(res[0])
	head, err := in.area(ctx, function, ret, stringSize, 4)
	if err != nil {
		return nil, err
	}
	ptr := binary.LittleEndian.Uint32(head[0:])
	n := binary.LittleEndian.Uint32(head[4:])
	if int(n) != len(requests) {
		return nil, in.guestFault(ctx, function, fmt.Sprintf("%d results for %d requests", n, len(requests)), nil)
	}
	if uint64(n)*resultSize > 0xffff_ffff {
		return nil, in.guestFault(ctx, function, fmt.Sprintf("%d results do not fit a 32-bit memory", n), nil)
	}
	items, err := in.area(ctx, function, ptr, n*resultSize, 4)
	if err != nil {
		return nil, err
	}
	out := make([]BatchItem, n)
	for i := range out {
		s, e, err := in.liftResult(ctx, function, items[i*resultSize:(i+1)*resultSize], 1)
		if err != nil {
			return nil, err
		}
		if e != nil {
			out[i].Err = e
		} else {
			out[i].JSON = s[0]
		}
	}
	return out, in.post(ctx, function, ret)
}

// BatchItem is one outcome of EvaluateBatchJSON: the decision JSON, or the evaluator's *Error.
type BatchItem struct {
	JSON string
	Err  *Error
}
