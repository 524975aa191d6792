package scaleunits

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"
)

// ConformanceSuite is a set of conformance vectors (tests/vectors/README.md, SPEC §11): what a
// Registry requires a candidate to pass, and what `go run scale-units.dev/go/cmd/conformance`
// runs.
type ConformanceSuite struct {
	Vectors []Vector
}

// Vector is one conformance vector file.
type Vector struct {
	File string
	ID   string
	// Request is the exact request text (the `request` member as written, or `request_json`).
	Request []byte
	// Object reports whether the vector carries `request` (a JSON object), not `request_json`.
	Object bool
	// Change is the text of a gate vector's proposed change (`change` as written, or
	// `change_json`); nil for other vectors. ChangeObject reports the former.
	Change       []byte
	ChangeObject bool
	Expect       struct {
		Gate           json.RawMessage `json:"gate"`
		GateError      *ExpectedError  `json:"gate_error"`
		Scaler         json.RawMessage `json:"scaler"`
		Decision       json.RawMessage `json:"decision"`
		Error          *ExpectedError  `json:"error"`
		ContractDigest string          `json:"contract_digest"`
		Derivation     json.RawMessage `json:"derivation"`
		Diagnosis      []ExpectedFault `json:"diagnosis"`
	}
	contract json.RawMessage
	readErr  error
}

// ExpectedError is a vector's expected error.
type ExpectedError struct {
	Code            ErrorCode `json:"code"`
	MessageContains string    `json:"message_contains"`
}

// ExpectedFault is one fault a diagnosis vector expects.
type ExpectedFault struct {
	Code            ErrorCode `json:"code"`
	Path            string    `json:"path"`
	HintContains    string    `json:"hint_contains"`
	MessageContains string    `json:"message_contains"`
}

// VectorFiles lists every *.json file below dir, recursively, sorted by path.
func VectorFiles(dir string) ([]string, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	var files []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".json") {
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// LoadConformanceSuite reads every vector below each dir. A vector that cannot be read stays
// in the suite and fails when run.
func LoadConformanceSuite(dirs ...string) (*ConformanceSuite, error) {
	suite := &ConformanceSuite{}
	for _, dir := range dirs {
		files, err := VectorFiles(dir)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			text, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			suite.Vectors = append(suite.Vectors, ParseVector(file, text))
		}
	}
	return suite, nil
}

// ParseVector reads one vector file's text.
func ParseVector(file string, text []byte) Vector {
	v := Vector{File: file, ID: file}
	var raw struct {
		ID          string          `json:"id"`
		Request     json.RawMessage `json:"request"`
		RequestJSON *string         `json:"request_json"`
		Change      json.RawMessage `json:"change"`
		ChangeJSON  *string         `json:"change_json"`
		Expect      json.RawMessage `json:"expect"`
	}
	if err := json.Unmarshal(text, &raw); err != nil {
		v.readErr = err
		return v
	}
	if raw.ID != "" {
		v.ID = raw.ID
	}
	switch {
	case raw.RequestJSON != nil && raw.Request == nil:
		v.Request = []byte(*raw.RequestJSON)
	case raw.Request != nil && raw.RequestJSON == nil:
		v.Request, v.Object = raw.Request, true
		var parts struct {
			Contract json.RawMessage `json:"contract"`
		}
		if json.Unmarshal(raw.Request, &parts) == nil {
			v.contract = parts.Contract
		}
	default:
		v.readErr = errors.New("a vector has exactly one of request and request_json")
		return v
	}
	switch {
	case raw.Change != nil && raw.ChangeJSON != nil:
		v.readErr = errors.New("a vector has at most one of change and change_json")
		return v
	case raw.Change != nil:
		v.Change, v.ChangeObject = raw.Change, true
	case raw.ChangeJSON != nil:
		v.Change = []byte(*raw.ChangeJSON)
	}
	if err := json.Unmarshal(raw.Expect, &v.Expect); err != nil {
		v.readErr = fmt.Errorf("expect: %w", err)
	} else if (v.Expect.Decision == nil) == (v.Expect.Error == nil) {
		v.readErr = errors.New("expect has exactly one of decision and error")
	}
	return v
}

// Check runs the vector through ev and returns what differs (nothing: it passes): the JSON
// path, the typed path where the request round-trips through Request, the derivation and the
// diagnosis where the component exports them, and the contract digest when pinned.
func (v *Vector) Check(ctx context.Context, ev *Evaluator) []string {
	if v.readErr != nil {
		return []string{"unreadable vector: " + v.readErr.Error()}
	}
	var problems []string
	add := func(prefix string, ps []string) {
		for _, p := range ps {
			problems = append(problems, prefix+": "+p)
		}
	}
	out, err := ev.EvaluateJSON(ctx, v.Request)
	add("EvaluateJSON", v.compareOutcome(out, err))
	if typed, ok := v.TypedRequest(); ok {
		add("Evaluate", v.compareTyped(ctx, ev, typed))
	}
	if v.Expect.Derivation != nil && ev.Supports("derive-json") {
		got, err := ev.DeriveJSON(ctx, v.Request)
		add("DeriveJSON", compareDerivation(v.Expect.Derivation, got, err))
	}
	if v.Expect.Diagnosis != nil && ev.Supports("diagnose-request-json") {
		d, err := ev.DiagnoseRequestJSON(ctx, v.Request)
		add("DiagnoseRequestJSON", compareDiagnosis(v.Expect.Diagnosis, d, err))
	}
	if v.Change != nil && ev.Supports("gate-json") {
		add("GateJSON", v.checkGate(ctx, ev))
	}
	if v.Expect.Scaler != nil && ev.Supports("scaler-reading-json") {
		got, err := ev.ScalerReadingJSON(ctx, v.Request)
		if err != nil {
			add("ScalerReadingJSON", []string{err.Error()})
		} else {
			add("ScalerReadingJSON", verdictDifference(v.Expect.Scaler, []byte(got), "scaler"))
			if typed, ok := v.TypedRequest(); ok {
				add("ScalerReading", typedAgrees(got, func() (any, error) { return ev.ScalerReading(ctx, typed) }, &ScalerReading{}))
			}
		}
	}
	if v.Expect.ContractDigest != "" {
		id, err := ev.ValidateContractJSON(ctx, v.contract)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("ValidateContractJSON: %v, expected %s", err, v.Expect.ContractDigest))
		case id.ContractDigest != v.Expect.ContractDigest:
			problems = append(problems, fmt.Sprintf("ValidateContractJSON: contract_digest %s, expected %s", id.ContractDigest, v.Expect.ContractDigest))
		}
	}
	return problems
}

// checkGate runs the change through gate-json and compares the verdict (or the error for a
// change that cannot be read); the typed Gate must agree with it where both the request and the
// change are typed.
func (v *Vector) checkGate(ctx context.Context, ev *Evaluator) []string {
	got, err := ev.GateJSON(ctx, v.Request, v.Change)
	var evalErr *Error
	if err != nil && !errors.As(err, &evalErr) {
		return []string{"host error: " + err.Error()}
	}
	switch {
	case v.Expect.GateError != nil && evalErr == nil:
		return []string{fmt.Sprintf("expected error %s, got a verdict %s", v.Expect.GateError.Code, truncate(got))}
	case v.Expect.GateError != nil:
		if evalErr.Code != v.Expect.GateError.Code || !strings.Contains(evalErr.Message, v.Expect.GateError.MessageContains) {
			return []string{fmt.Sprintf("got %v, expected %s %q", evalErr, v.Expect.GateError.Code, v.Expect.GateError.MessageContains)}
		}
		return nil
	case evalErr != nil:
		return []string{fmt.Sprintf("expected a verdict, got %v", evalErr)}
	case v.Expect.Gate == nil:
		return []string{"a gate vector without expect.gate or expect.gate_error"}
	}
	ps := verdictDifference(v.Expect.Gate, []byte(got), "gate")
	typed, ok := v.TypedRequest()
	var change Change
	if ok && v.ChangeObject && json.Unmarshal(v.Change, &change) == nil {
		again, _ := json.Marshal(change)
		if sameJSON(v.Change, again, false) {
			ps = append(ps, typedAgrees(got, func() (any, error) { return ev.Gate(ctx, typed, change) }, &Verdict{})...)
		}
	}
	return ps
}

// typedAgrees checks that the typed call returns what the JSON call's text reads into, and that
// the typed value encodes back to that text's value.
func typedAgrees(text string, call func() (any, error), want any) []string {
	got, err := call()
	if err != nil {
		return []string{"typed: " + err.Error()}
	}
	if err := json.Unmarshal([]byte(text), want); err != nil {
		return []string{"typed: the JSON does not read into the Go type: " + err.Error()}
	}
	if !reflect.DeepEqual(got, want) {
		return []string{fmt.Sprintf("typed: %+v, the JSON call read %+v", got, want)}
	}
	again, _ := json.Marshal(got)
	if !SameJSON([]byte(text), again) {
		return []string{"typed: encoded again it differs: " + truncate(string(again))}
	}
	return nil
}

// verdictDifference compares a verdict or a scaler reading with its expectation as
// scale_units_core::conformance does: every expected member, `message_contains` as a fragment of
// `message`, a non-null `error` by code and message fragment, and no unexpected member.
func verdictDifference(want, got []byte, path string) []string {
	var w, g map[string]any
	if err := decodeExact(want, &w); err != nil {
		return []string{path + ": expected value unreadable: " + err.Error()}
	}
	if err := decodeExact(got, &g); err != nil {
		return []string{path + ": not a JSON object: " + err.Error()}
	}
	var ps []string
	for key, wv := range w {
		if key == "message_contains" {
			message, _ := g["message"].(string)
			if fragment, _ := wv.(string); !strings.Contains(message, fragment) {
				ps = append(ps, fmt.Sprintf("%s.message: %q does not contain %q", path, message, fragment))
			}
			continue
		}
		gv, ok := g[key]
		if !ok {
			ps = append(ps, fmt.Sprintf("%s.%s: missing", path, key))
			continue
		}
		if key == "error" && wv != nil {
			we, _ := wv.(map[string]any)
			ge, _ := gv.(map[string]any)
			code, _ := we["code"].(string)
			fragment, _ := we["message_contains"].(string)
			gotCode, _ := ge["code"].(string)
			message, _ := ge["message"].(string)
			if code != gotCode || !strings.Contains(message, fragment) {
				ps = append(ps, fmt.Sprintf("%s.error: %s %q, expected %s containing %q", path, gotCode, message, code, fragment))
			}
			continue
		}
		if !reflect.DeepEqual(wv, gv) {
			gb, _ := json.Marshal(gv)
			wb, _ := json.Marshal(wv)
			ps = append(ps, fmt.Sprintf("%s.%s: got %s, expected %s", path, key, truncate(string(gb)), truncate(string(wb))))
		}
	}
	for key := range g {
		if _, ok := w[key]; !ok && !(key == "message" && w["message_contains"] != nil) {
			ps = append(ps, fmt.Sprintf("%s.%s: unexpected field", path, key))
		}
	}
	sort.Strings(ps)
	return ps
}

// TypedRequest decodes the vector's request into a Request when that loses nothing: encoding
// the Request again gives the same JSON value (times compared as instants). A request with an
// unknown field, a wrong type, a number out of its Go type or a malformed time is not typed.
func (v *Vector) TypedRequest() (*Request, bool) {
	if !v.Object {
		return nil, false
	}
	var r Request
	if err := json.Unmarshal(v.Request, &r); err != nil {
		return nil, false
	}
	again, err := json.Marshal(&r)
	if err != nil {
		return nil, false
	}
	return &r, sameJSON(v.Request, again, true)
}

func (v *Vector) compareOutcome(out string, err error) []string {
	var evalErr *Error
	if err != nil && !errors.As(err, &evalErr) {
		return []string{"host error: " + err.Error()}
	}
	if v.Expect.Error != nil {
		if evalErr == nil {
			return []string{"expected error " + string(v.Expect.Error.Code) + ", got a decision " + truncate(out)}
		}
		var ps []string
		if evalErr.Code != v.Expect.Error.Code {
			ps = append(ps, fmt.Sprintf("error code %s (%s), expected %s", evalErr.Code, evalErr.Message, v.Expect.Error.Code))
		}
		if !strings.Contains(evalErr.Message, v.Expect.Error.MessageContains) {
			ps = append(ps, fmt.Sprintf("error message %q lacks %q", evalErr.Message, v.Expect.Error.MessageContains))
		}
		return ps
	}
	if evalErr != nil {
		return []string{fmt.Sprintf("expected a decision, got %v", evalErr)}
	}
	return diffFields(v.Expect.Decision, []byte(out))
}

// compareTyped runs the typed request and compares the typed decision with the expected one
// read into a Decision, and the Decision encoded again with the expected JSON.
func (v *Vector) compareTyped(ctx context.Context, ev *Evaluator, r *Request) []string {
	d, err := ev.Evaluate(ctx, r)
	var evalErr *Error
	if err != nil && !errors.As(err, &evalErr) {
		return []string{"host error: " + err.Error()}
	}
	if v.Expect.Error != nil {
		if evalErr == nil {
			return []string{"expected error " + string(v.Expect.Error.Code) + ", got a decision"}
		}
		if evalErr.Code != v.Expect.Error.Code || !strings.Contains(evalErr.Message, v.Expect.Error.MessageContains) {
			return []string{fmt.Sprintf("got %v, expected %s %q", evalErr, v.Expect.Error.Code, v.Expect.Error.MessageContains)}
		}
		return nil
	}
	if evalErr != nil {
		return []string{fmt.Sprintf("expected a decision, got %v", evalErr)}
	}
	var want Decision
	if err := json.Unmarshal(v.Expect.Decision, &want); err != nil {
		return []string{"the expected decision does not read into a Decision: " + err.Error()}
	}
	again, _ := json.Marshal(d)
	var ps []string
	if !want.EvaluatedAt.Equal(d.EvaluatedAt) {
		ps = append(ps, fmt.Sprintf("evaluated_at %v, expected %v", d.EvaluatedAt, want.EvaluatedAt))
	}
	d.EvaluatedAt, want.EvaluatedAt = time.Time{}, time.Time{}
	if !reflect.DeepEqual(*d, want) {
		ps = append(ps, fmt.Sprintf("decision %+v, expected %+v", *d, want))
	}
	if !SameJSON(v.Expect.Decision, again) && len(ps) == 0 {
		ps = append(ps, "the Decision encoded again differs from the expected decision: "+string(again))
	}
	return ps
}

func compareDerivation(want json.RawMessage, got string, err error) []string {
	if err != nil {
		return []string{fmt.Sprintf("expected a derivation, got %v", err)}
	}
	ps := diffFields(want, []byte(got))
	// The typed Derivation must carry the same value.
	var d Derivation
	if err := decodeGuestJSON("derive-json", got, &d); err != nil {
		return append(ps, err.Error())
	}
	again, _ := json.Marshal(&d)
	if !SameJSON(want, again) {
		ps = append(ps, "the Derivation encoded again differs: "+truncate(string(again)))
	}
	return ps
}

func compareDiagnosis(want []ExpectedFault, d *Diagnosis, err error) []string {
	if err != nil {
		return []string{fmt.Sprintf("diagnose: %v", err)}
	}
	var ps []string
	for i, w := range want {
		if i >= len(d.Faults) {
			break
		}
		g := d.Faults[i]
		switch {
		case g.Code != w.Code || g.Path != w.Path:
			ps = append(ps, fmt.Sprintf("[%d]: expected %s at %q, got %s at %q: %s", i, w.Code, w.Path, g.Code, g.Path, g.Message))
		case !strings.Contains(g.Hint, w.HintContains):
			ps = append(ps, fmt.Sprintf("[%d]: hint %q lacks %q", i, g.Hint, w.HintContains))
		case !strings.Contains(g.Message, w.MessageContains):
			ps = append(ps, fmt.Sprintf("[%d]: message %q lacks %q", i, g.Message, w.MessageContains))
		}
	}
	if len(d.Faults) != len(want) {
		ps = append(ps, fmt.Sprintf("expected %d faults, got %d", len(want), len(d.Faults)))
	}
	return ps
}

// diffFields compares two JSON objects member by member, numbers exactly.
func diffFields(want, got []byte) []string {
	var w, g map[string]any
	if err := decodeExact(want, &w); err != nil {
		return []string{"expected value unreadable: " + err.Error()}
	}
	if err := decodeExact(got, &g); err != nil {
		return []string{"result is not a JSON object: " + err.Error()}
	}
	keys := map[string]bool{}
	for k := range w {
		keys[k] = true
	}
	for k := range g {
		keys[k] = true
	}
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var ps []string
	for _, k := range names {
		if !reflect.DeepEqual(w[k], g[k]) {
			gb, _ := json.Marshal(g[k])
			wb, _ := json.Marshal(w[k])
			ps = append(ps, fmt.Sprintf("%s: got %s, expected %s", k, truncate(string(gb)), truncate(string(wb))))
		}
	}
	return ps
}

// decodeExact reads JSON with numbers as exact big.Int (integers) or text (others).
func decodeExact(b []byte, v *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	m, ok := exactNumbers(raw).(map[string]any)
	if !ok {
		return errors.New("not an object")
	}
	*v = m
	return nil
}

func exactNumbers(x any) any {
	switch t := x.(type) {
	case json.Number:
		if i, ok := new(big.Int).SetString(string(t), 10); ok {
			return i.String()
		}
		return "number:" + string(t)
	case map[string]any:
		for k, v := range t {
			t[k] = exactNumbers(v)
		}
		return t
	case []any:
		for i, v := range t {
			t[i] = exactNumbers(v)
		}
		return t
	}
	return x
}

// SameJSON reports whether two JSON texts hold the same value: integers compared exactly, and
// strings of members whose name ends in "_at" or is "now" compared as instants when both read
// as RFC 3339 times (the offset and the fraction's trailing zeros are spelling).
func SameJSON(a, b []byte) bool { return sameJSON(a, b, false) }

// sameJSON is SameJSON; with dropNull, a member whose value is null counts as absent (the
// request's nullable fields mean the same either way), as does an empty contract identity.
func sameJSON(a, b []byte, dropNull bool) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(normalize("", exactNumbers(x), dropNull), normalize("", exactNumbers(y), dropNull))
}

func normalize(key string, x any, dropNull bool) any {
	switch t := x.(type) {
	case string:
		if (strings.HasSuffix(key, "_at") || key == "now") && specTime.MatchString(t) && t[len(t)-2:] < "60" {
			if at, err := time.Parse(time.RFC3339Nano, t); err == nil {
				return at.UTC().Format(time.RFC3339Nano)
			}
		}
		return t
	case map[string]any:
		for k, v := range t {
			// SPEC §4.3: contract_id and contract_digest default to "", so "" and absent are one.
			if dropNull && ((v == nil && nullable[k]) || (v == "" && (k == "contract_id" || k == "contract_digest"))) {
				delete(t, k)
				continue
			}
			t[k] = normalize(k, v, dropNull)
		}
		return t
	case []any:
		for i, v := range t {
			t[i] = normalize(key, v, dropNull)
		}
		return t
	}
	return x
}

// nullable are the request's fields where null means omitted (SPEC §1); elsewhere null is an error.
var nullable = map[string]bool{"signal": true, "continuity": true, "safety": true, "last_action_at": true, "external_store_ref": true, "reason_ref": true}

// specTime is the SPEC's time syntax (§3), whose instants compare across spellings; any other
// text compares as text, so a time Go would read but the SPEC refuses is not a lossless round trip.
var specTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-][01]\d:\d\d|[+-]2[0-3]:\d\d)$`)

func truncate(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// Report is what running a suite found.
type Report struct {
	Passed   int
	Failed   int
	Failures []string
}

// Run checks every vector of the suite through ev, stopping after maxFailures failures
// (0: never stops).
func (s *ConformanceSuite) Run(ctx context.Context, ev *Evaluator, maxFailures int) Report {
	var r Report
	for i := range s.Vectors {
		v := &s.Vectors[i]
		if ps := v.Check(ctx, ev); len(ps) > 0 {
			r.Failed++
			r.Failures = append(r.Failures, v.ID+": "+strings.Join(ps, "; "))
			if maxFailures > 0 && r.Failed >= maxFailures {
				break
			}
		} else {
			r.Passed++
		}
	}
	return r
}
