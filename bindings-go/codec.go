package scaleunits

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// The typed path's own JSON: a Request written and a Decision read without reflection.
//
// Evaluate used encoding/json both ways, and on wazero with the budget its conversion cost
// about as much as the decision itself (BENCHMARKS.md, "Go"). appendRequest writes exactly the
// bytes json.Marshal writes for a *Request (codec_test.go holds it to them over every vector's
// request and a fuzz target), and falls back to json.Marshal for what it does not write itself
// (a time json.Marshal refuses). readDecision reads what the component writes, compact JSON with
// the fields in order, into a Decision equal to what decodeGuestJSON reads, and declines
// anything else (an escape, an unknown or repeated key, a null, a number that is not a plain
// unsigned integer, text after the object): the caller then decodes with encoding/json, so every
// answer, error or not, is encoding/json's.

// appendRequest appends r as json.Marshal writes it; false when it cannot.
func appendRequest(b []byte, r *Request) ([]byte, bool) {
	ok := true
	b = append(b, `{"contract":`...)
	b, ok = appendContract(b, &r.Contract, ok)
	b = append(b, `,"current_replicas":`...)
	b = strconv.AppendInt(b, r.CurrentReplicas, 10)
	if s := r.Signal; s != nil {
		b = append(b, `,"signal":{"signal":`...)
		b = appendString(b, string(s.Signal))
		b = append(b, `,"value":`...)
		b = strconv.AppendInt(b, s.Value, 10)
		b, ok = appendObserved(b, &s.Observed, ok)
		b = append(b, '}')
	}
	if r.Capacities != nil {
		b = append(b, `,"capacities":[`...)
		for i := range r.Capacities {
			c := &r.Capacities[i]
			b = appendComma(b, i)
			b = append(b, `{"axis":`...)
			b = appendString(b, string(c.Axis))
			b = appendUint(b, `,"allocatable":`, c.Allocatable)
			b = appendUint(b, `,"reserved":`, c.Reserved)
			b = appendUint(b, `,"used":`, c.Used)
			b, ok = appendObserved(b, &c.Observed, ok)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if r.Quotas != nil {
		b = append(b, `,"quotas":[`...)
		for i := range r.Quotas {
			q := &r.Quotas[i]
			b = appendComma(b, i)
			b = append(b, `{"quota_ref":`...)
			b = appendString(b, q.QuotaRef)
			b = append(b, `,"scope":`...)
			b = appendString(b, string(q.Scope))
			b = appendUint(b, `,"limit":`, q.Limit)
			b = appendUint(b, `,"used":`, q.Used)
			b, ok = appendObserved(b, &q.Observed, ok)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if c := r.Continuity; c != nil {
		b = append(b, `,"continuity":{"ready":`...)
		b = strconv.AppendBool(b, c.Ready)
		b = appendUint(b, `,"active_sessions":`, c.ActiveSessions)
		b = appendUint(b, `,"active_streams":`, c.ActiveStreams)
		b, ok = appendObserved(b, &c.Observed, ok)
		b = append(b, '}')
	}
	if s := r.Safety; s != nil {
		b = append(b, `,"safety":{"overloaded":`...)
		b = strconv.AppendBool(b, s.Overloaded)
		b = append(b, `,"noisy_neighbor":`...)
		b = strconv.AppendBool(b, s.NoisyNeighbor)
		if s.ReasonRef != nil {
			b = append(b, `,"reason_ref":`...)
			b = appendString(b, *s.ReasonRef)
		}
		b, ok = appendObserved(b, &s.Observed, ok)
		b = append(b, '}')
	}
	b = append(b, `,"now":`...)
	b, ok = appendTime(b, r.Now, ok)
	if r.LastActionAt != nil {
		b = append(b, `,"last_action_at":`...)
		b, ok = appendTime(b, *r.LastActionAt, ok)
	}
	return append(b, '}'), ok
}

func appendComma(b []byte, i int) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	return b
}

func appendUint(b []byte, key string, v uint64) []byte {
	return strconv.AppendUint(append(b, key...), v, 10)
}

// appendOptUint appends key and *v when v is set; key starts with a comma unless first is set,
// and first is cleared.
func appendOptUint(b []byte, key string, v *uint64, first *bool) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendUint(appendKey(b, key, first), *v, 10)
}

func appendOptBool(b []byte, key string, v *bool, first *bool) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendBool(appendKey(b, key, first), *v)
}

func appendKey(b []byte, key string, first *bool) []byte {
	if !*first {
		b = append(b, ',')
	}
	*first = false
	return append(b, key...)
}

func appendContract(b []byte, c *Contract, ok bool) ([]byte, bool) {
	b = append(b, '{')
	if c.SchemaVersion != "" {
		b = append(b, `"schema_version":`...)
		b = appendString(b, c.SchemaVersion)
		b = append(b, ',')
	}
	b = append(b, `"unit_ref":`...)
	b = appendString(b, c.UnitRef)
	b = append(b, `,"surface":`...)
	b = appendString(b, string(c.Surface))
	first := false
	b = appendOptUint(b, `"version":`, c.Version, &first)
	p := &c.Policy
	b = append(b, `,"policy":{`...)
	first = true
	b = appendOptUint(b, `"min_replicas":`, p.MinReplicas, &first)
	b = appendOptUint(b, `"max_replicas":`, p.MaxReplicas, &first)
	b = appendOptUint(b, `"target":`, &p.Target, &first)
	b = append(b, `,"target_signal":`...)
	b = appendString(b, string(p.TargetSignal))
	b = appendOptUint(b, `"scale_up_step":`, p.ScaleUpStep, &first)
	b = appendOptUint(b, `"scale_down_step":`, p.ScaleDownStep, &first)
	b = appendOptUint(b, `"scale_up_cooldown_s":`, p.ScaleUpCooldownS, &first)
	b = appendOptUint(b, `"scale_down_cooldown_s":`, p.ScaleDownCooldownS, &first)
	b = appendOptUint(b, `"drain_seconds":`, p.DrainSeconds, &first)
	b = appendOptBool(b, `"allow_scale_to_zero":`, p.AllowScaleToZero, &first)
	b = appendOptBool(b, `"allow_scale_from_zero":`, p.AllowScaleFromZero, &first)
	b = append(b, `},"allowed_signals":`...)
	if c.AllowedSignals == nil {
		b = append(b, `null`...)
	} else {
		b = append(b, '[')
		for i, s := range c.AllowedSignals {
			b = appendString(appendComma(b, i), string(s))
		}
		b = append(b, ']')
	}
	b = append(b, `,"required_capacity_axes":`...)
	b = appendAxes(b, c.RequiredCapacityAxes)
	b = append(b, `,"replica_demands":`...)
	if c.ReplicaDemands == nil {
		b = append(b, `null`...)
	} else {
		b = append(b, '[')
		for i := range c.ReplicaDemands {
			d := &c.ReplicaDemands[i]
			b = append(appendComma(b, i), `{"axis":`...)
			b = appendString(b, string(d.Axis))
			b = append(appendUint(b, `,"per_replica":`, d.PerReplica), '}')
		}
		b = append(b, ']')
	}
	if c.Quotas != nil {
		b = append(b, `,"quotas":[`...)
		for i := range c.Quotas {
			q := &c.Quotas[i]
			b = append(appendComma(b, i), `{"quota_ref":`...)
			b = appendString(b, q.QuotaRef)
			b = append(b, `,"axis":`...)
			b = appendString(b, string(q.Axis))
			b = append(b, `,"scope":`...)
			b = appendString(b, string(q.Scope))
			b = appendUint(b, `,"per_replica":`, q.PerReplica)
			first = false
			b = append(appendOptBool(b, `"multiplicative":`, q.Multiplicative, &first), '}')
		}
		b = append(b, ']')
	}
	if l := c.PartitionLease; l != nil {
		b = append(b, `,"partition_lease":{`...)
		first = true
		b = appendOptBool(b, `"partitioned":`, l.Partitioned, &first)
		b = appendOptUint(b, `"partitions_per_replica":`, l.PartitionsPerReplica, &first)
		b = appendOptBool(b, `"lease_required":`, l.LeaseRequired, &first)
		b = appendOptUint(b, `"lease_ttl_s":`, l.LeaseTTLS, &first)
		b = appendOptBool(b, `"fencing_required":`, l.FencingRequired, &first)
		b = append(b, '}')
	}
	k := &c.Continuity
	b = append(b, `,"continuity":{"mode":`...)
	b = appendString(b, string(k.Mode))
	if k.ExternalStoreRef != nil {
		b = append(b, `,"external_store_ref":`...)
		b = appendString(b, *k.ExternalStoreRef)
	}
	first = false
	b = appendOptBool(b, `"drain_required":`, k.DrainRequired, &first)
	b = appendOptBool(b, `"block_scale_down_with_active":`, k.BlockScaleDownWithActive, &first)
	b = appendOptUint(b, `"max_drain_seconds":`, k.MaxDrainSeconds, &first)
	b = append(b, '}')
	b = appendOptBool(b, `"safety_required":`, c.SafetyRequired, &first)
	if c.EngineAuthorityAxes != nil {
		b = append(b, `,"engine_authority_axes":`...)
		b = appendAxes(b, c.EngineAuthorityAxes)
	}
	if c.ContractID != "" {
		b = append(b, `,"contract_id":`...)
		b = appendString(b, c.ContractID)
	}
	if c.ContractDigest != "" {
		b = append(b, `,"contract_digest":`...)
		b = appendString(b, c.ContractDigest)
	}
	return append(b, '}'), ok
}

func appendAxes(b []byte, axes []CapacityAxis) []byte {
	if axes == nil {
		return append(b, `null`...)
	}
	b = append(b, '[')
	for i, a := range axes {
		b = appendString(appendComma(b, i), string(a))
	}
	return append(b, ']')
}

// appendObserved appends the fields of Observed, which every observation embeds, after a comma.
func appendObserved(b []byte, o *Observed, ok bool) ([]byte, bool) {
	b = append(b, `,"observed_at":`...)
	b, ok = appendTime(b, o.ObservedAt, ok)
	b = append(b, `,"expires_at":`...)
	b, ok = appendTime(b, o.ExpiresAt, ok)
	b = append(b, `,"source_ref":`...)
	b = appendString(b, o.SourceRef)
	b = append(b, `,"source_digest":`...)
	return appendString(b, o.SourceDigest), ok
}

// appendTime appends t at microsecond resolution (Request.MarshalJSON) as
// time.Time.MarshalJSON writes it: RFC 3339, the fraction's trailing zeros dropped. A time
// MarshalJSON refuses (a year outside 0..9999, an offset of 24 hours or more) turns ok false:
// json.Marshal is then asked, for its error.
func appendTime(b []byte, t time.Time, ok bool) ([]byte, bool) {
	t = t.Truncate(time.Microsecond)
	b = append(b, '"')
	start := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	text := b[start:]
	switch {
	case len(text) < len("2006-01-02T15:04:05Z") || text[4] != '-':
		ok = false
	case text[len(text)-1] != 'Z':
		offset := text[len(text)-len("07:00"):]
		if c := text[len(text)-len("Z07:00")]; c >= '0' && c <= '9' || (offset[0]-'0')*10+(offset[1]-'0') >= 24 {
			ok = false
		}
	}
	return append(b, '"'), ok
}

const hexDigits = "0123456789abcdef"

// plainByte marks the ASCII bytes appendString writes as they are.
var plainByte = func() (t [utf8.RuneSelf]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString appends s as a JSON string as encoding/json writes it: <, > and & as \u003c,
// \u003e, \u0026; \b, \f, \n, \r, \t by name and other control bytes as \u00XX; U+2028 and
// U+2029 escaped; each byte that is not part of valid UTF-8 as \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainByte[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// readDecision reads the decision the component writes into d; false (d then holds a partial
// read and must be discarded) for anything it leaves to encoding/json.
func readDecision(text string, d *Decision) bool {
	p := jsonReader{s: text}
	if !p.next('{') {
		return false
	}
	var seen uint16
	for !p.next('}') {
		if seen != 0 && !p.next(',') {
			return false
		}
		key, ok := p.str()
		if !ok || !p.next(':') {
			return false
		}
		var field uint16
		switch key {
		case "schema_version":
			field = 1 << 0
			d.SchemaVersion, ok = p.str()
		case "decision_id":
			field = 1 << 1
			d.DecisionID, ok = p.str()
		case "decision_digest":
			field = 1 << 2
			d.DecisionDigest, ok = p.str()
		case "contract_id":
			field = 1 << 3
			d.ContractID, ok = p.str()
		case "evaluated_at":
			field = 1 << 4
			ok = p.time(&d.EvaluatedAt)
		case "current_replicas":
			field = 1 << 5
			d.CurrentReplicas, ok = p.uint()
		case "desired_replicas":
			field = 1 << 6
			d.DesiredReplicas, ok = p.uint()
		case "action":
			field = 1 << 7
			var s string
			s, ok = p.str()
			d.Action = Action(s)
		case "reasons":
			field = 1 << 8
			ok = p.reasons(d)
		case "drain_required":
			field = 1 << 9
			d.DrainRequired, ok = p.bool()
		case "evidence":
			field = 1 << 10
			ok = p.evidence(d)
		default:
			return false
		}
		if !ok || seen&field != 0 {
			return false
		}
		seen |= field
	}
	p.space()
	return p.i == len(p.s)
}

// jsonReader reads the compact JSON readDecision accepts.
type jsonReader struct {
	s string
	i int
}

func (p *jsonReader) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next consumes c (after whitespace) when it comes next.
func (p *jsonReader) next(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string without escapes or control characters, valid UTF-8.
func (p *jsonReader) str() (string, bool) {
	if !p.next('"') {
		return "", false
	}
	start := p.i
	ascii := true
	for ; p.i < len(p.s); p.i++ {
		c := p.s[p.i]
		switch {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			return s, ascii || utf8.ValidString(s)
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// uint reads 0 or a digit 1-9 and more digits, as a uint64.
func (p *jsonReader) uint() (uint64, bool) {
	p.space()
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	digits := p.s[start:p.i]
	if len(digits) == 0 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	v, err := strconv.ParseUint(digits, 10, 64)
	return v, err == nil
}

func (p *jsonReader) bool() (bool, bool) {
	p.space()
	switch {
	case len(p.s)-p.i >= 4 && p.s[p.i:p.i+4] == "true":
		p.i += 4
		return true, true
	case len(p.s)-p.i >= 5 && p.s[p.i:p.i+5] == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

// time reads a string through time.Time's own UnmarshalJSON, as encoding/json does.
func (p *jsonReader) time(t *time.Time) bool {
	p.space()
	start := p.i
	if _, ok := p.str(); !ok {
		return false
	}
	return t.UnmarshalJSON([]byte(p.s[start:p.i])) == nil
}

func (p *jsonReader) reasons(d *Decision) bool {
	if !p.next('[') {
		return false
	}
	d.Reasons = make([]Reason, 0, 4)
	if p.next(']') {
		return true
	}
	for {
		s, ok := p.str()
		if !ok {
			return false
		}
		d.Reasons = append(d.Reasons, Reason(s))
		if p.next(']') {
			return true
		}
		if !p.next(',') {
			return false
		}
	}
}

func (p *jsonReader) evidence(d *Decision) bool {
	if !p.next('[') {
		return false
	}
	d.Evidence = make([]Evidence, 0, 8)
	if p.next(']') {
		return true
	}
	for {
		var e Evidence
		if !p.evidenceEntry(&e) {
			return false
		}
		d.Evidence = append(d.Evidence, e)
		if p.next(']') {
			return true
		}
		if !p.next(',') {
			return false
		}
	}
}

func (p *jsonReader) evidenceEntry(e *Evidence) bool {
	if !p.next('{') {
		return false
	}
	var seen uint8
	for !p.next('}') {
		if seen != 0 && !p.next(',') {
			return false
		}
		key, ok := p.str()
		if !ok || !p.next(':') {
			return false
		}
		value, ok := p.str()
		if !ok {
			return false
		}
		var field uint8
		switch key {
		case "kind":
			field, e.Kind = 1<<0, EvidenceKind(value)
		case "ref":
			field, e.Ref = 1<<1, value
		case "digest":
			field, e.Digest = 1<<2, value
		case "status":
			field, e.Status = 1<<3, EvidenceStatus(value)
		case "code":
			field, e.Code = 1<<4, value
		default:
			return false
		}
		if seen&field != 0 {
			return false
		}
		seen |= field
	}
	return true
}
