// Command envoy-decoders decodes request bodies the way the actuators behind the Envoy gate do,
// and reports what each would apply: the replica count (and Docker's service name), or the error
// that makes it refuse the body. server/src/envoy/differential.rs holds the gate's reading
// (server/src/envoy/decoder.rs) to these answers.
//
// Each line of standard input is one body, in hexadecimal; each line of standard
// output is one JSON object for it, in order:
//
//	{"docker":R,"nomad":R,"go":R,"exact":R,"kubernetes":{"put":K,"merge":K,"strategic":K}}
//
// R is {"count":N} (null when the decoded request sets no count), with "name" for Docker, or
// {"error":"..."}; K is {"ignore":R,"warn":R,"strict":R}, one per fieldValidation directive.
// "go" and "exact" are actuators of one's own with the path /Workers/Instances: Go's
// encoding/json, and a case-sensitive decoder that keeps the last of a key (sigs.k8s.io/json).
//
// With the argument "folds", it prints instead the runes encoding/json matches to an ASCII
// letter of a field name other than the letter's two cases, one "U+XXXX x" per line. With the
// argument "query", each line of input is a query string (hexadecimal) and each line of output
// what a Go server reads from it as Docker's and Nomad's handlers do (Request.URL.Query().Get):
// {"rollback":"...","namespace":"..."}, or {"error":"..."} when the request target does not
// parse.
package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"sort"
	"strings"
	"unicode"

	nomad "github.com/hashicorp/nomad/api"
	"github.com/moby/moby/api/types/swarm"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kjson "sigs.k8s.io/json"
)

// Result is what one actuator does with one body.
type Result struct {
	Count *int64  `json:"count"`
	Name  *string `json:"name,omitempty"`
	Error string  `json:"error,omitempty"`
}

func failed(err error) Result { return Result{Error: err.Error()} }

// dockerService is moby's serviceWithLegacy (daemon/server/router/swarm/cluster_routes.go), the
// type POST /services/{id}/update decodes into.
type dockerService struct {
	swarm.ServiceSpec
	Networks []swarm.NetworkAttachmentConfig `json:",omitempty"`
}

// docker is moby's httputils.ReadJSON (daemon/server/httputils/httputils.go) into dockerService:
// an empty body is no error (the spec stays empty), one value is decoded, anything but a closing
// bracket after it is refused.
func docker(body []byte) Result {
	var service dockerService
	if len(body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&service); err != nil {
			return failed(err)
		}
		if dec.More() {
			return failed(errors.New("unexpected content after JSON"))
		}
	}
	name := service.Name
	result := Result{Name: &name}
	if r := service.Mode.Replicated; r != nil && r.Replicas != nil {
		// Past int64 it is reported as is (wrapped): the gate refuses any count past 10 000.
		count := int64(*r.Replicas)
		result.Count = &count
	}
	return result
}

// nomadScale is Nomad's jobScaleAction (command/agent/job_endpoint.go) through decodeBody
// (command/agent/http.go): one value decoded through an interface, nothing after it read.
func nomadScale(body []byte) Result {
	if len(body) == 0 {
		return failed(errors.New("Request body is empty"))
	}
	var args nomad.ScalingRequest
	var out any = &args
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&out); err != nil {
		return failed(err)
	}
	return Result{Count: args.Count}
}

// goCustom is an actuator of one's own written in Go: the same reading as Docker's into a struct
// whose path has every letter Go folds specially (k, s, i): /Workers/Instances.
func goCustom(body []byte) Result {
	var request struct {
		Workers struct {
			Instances *uint64
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&request); err != nil {
		return failed(err)
	}
	if dec.More() {
		return failed(errors.New("unexpected content after JSON"))
	}
	if request.Workers.Instances == nil {
		return Result{}
	}
	count := int64(*request.Workers.Instances)
	return Result{Count: &count}
}

// exactCustom is the same request read case-sensitively, the last of a key kept.
func exactCustom(body []byte) Result {
	var request struct {
		Workers struct {
			Instances *uint64 `json:"Instances"`
		} `json:"Workers"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &request); err != nil {
		return failed(err)
	}
	if request.Workers.Instances == nil {
		return Result{}
	}
	count := int64(*request.Workers.Instances)
	return Result{Count: &count}
}

// The Scale the patches apply to: 3 replicas.
var current = []byte(`{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"web","namespace":"shop","uid":"5f0c","resourceVersion":"7"},"spec":{"replicas":3},"status":{"replicas":3,"selector":"app=web"}}`)

type directive int

const (
	ignore directive = iota
	warn
	strict
)

// decode is the API server's JSON serializer (k8s.io/apimachinery serializer/json unmarshal):
// case-sensitive, non-strict for fieldValidation=Ignore; UnmarshalStrict otherwise, whose strict
// errors (duplicate and unknown fields) refuse the body under Strict and are warnings under Warn.
func decode(data []byte, mode directive, earlier []error) Result {
	var scale autoscalingv1.Scale
	if mode == ignore {
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &scale); err != nil {
			return failed(err)
		}
	} else {
		strictErrs, err := kjson.UnmarshalStrict(data, &scale)
		if err != nil {
			return failed(err)
		}
		if all := append(earlier, strictErrs...); mode == strict && len(all) > 0 {
			return failed(fmt.Errorf("strict decoding error: %v", all))
		}
	}
	count := int64(scale.Spec.Replicas)
	return Result{Count: &count}
}

// put is PUT of a Scale (apiserver endpoints/handlers/update.go through the serializer).
func put(body []byte, mode directive) Result {
	return decode(body, mode, nil)
}

// merge is a JSON merge patch (endpoints/handlers/patch.go, jsonPatcher.applyJSPatch): the patch
// checked for strict errors as a map, applied by evanphx/json-patch v4, the result decoded.
func merge(body []byte, mode directive) Result {
	var strictErrs []error
	if mode != ignore {
		v := map[string]any{}
		var err error
		if strictErrs, err = kjson.UnmarshalStrict(body, &v); err != nil {
			return failed(err)
		}
	}
	patched, err := jsonpatch.MergePatch(current, body)
	if err != nil {
		return failed(err)
	}
	return decode(patched, mode, strictErrs)
}

// strategic is a strategic merge patch (patch.go, strategicPatchObject and applyPatchToObject).
func strategic(body []byte, mode directive) Result {
	var original autoscalingv1.Scale
	if err := kjson.UnmarshalCaseSensitivePreserveInts(current, &original); err != nil {
		return failed(err)
	}
	originalMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&original)
	if err != nil {
		return failed(err)
	}
	patchMap := map[string]any{}
	var strictErrs []error
	if mode == ignore {
		err = kjson.UnmarshalCaseSensitivePreserveInts(body, &patchMap)
	} else {
		strictErrs, err = kjson.UnmarshalStrict(body, &patchMap)
	}
	if err != nil {
		return failed(err)
	}
	patchedMap, err := strategicpatch.StrategicMergeMapPatch(originalMap, patchMap, &autoscalingv1.Scale{})
	if err != nil {
		return failed(err)
	}
	var scale autoscalingv1.Scale
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patchedMap, &scale, mode != ignore); err != nil {
		if _, isStrict := runtime.AsStrictDecodingError(err); !isStrict || mode == strict {
			return failed(err)
		}
	} else if mode == strict && len(strictErrs) > 0 {
		return failed(fmt.Errorf("strict decoding error: %v", strictErrs))
	}
	count := int64(scale.Spec.Replicas)
	return Result{Count: &count}
}

func modes(body []byte, apply func([]byte, directive) Result) map[string]Result {
	return map[string]Result{"ignore": apply(body, ignore), "warn": apply(body, warn), "strict": apply(body, strict)}
}

// folds lists the runes encoding/json matches to a one-letter field other than its two cases:
// each block of runes is decoded as one object whose keys are the runes and whose values are
// their numbers, into a struct of fields A to Z; a field set names a rune that matched it, which
// is then left out of the block until no field is set.
func folds(out *bufio.Writer) error {
	type letters struct{ A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z *int32 }
	const block = 4096
	var found []string
	for start := rune(0x80); start <= unicode.MaxRune; start += block {
		left := map[rune]bool{}
		for {
			var object bytes.Buffer
			object.WriteByte('{')
			for r := start; r < start+block && r <= unicode.MaxRune; r++ {
				if left[r] || (r >= 0xD800 && r <= 0xDFFF) {
					continue
				}
				if object.Len() > 1 {
					object.WriteByte(',')
				}
				key, err := json.Marshal(string(r))
				if err != nil {
					return err
				}
				fmt.Fprintf(&object, "%s:%d", key, r)
			}
			object.WriteByte('}')
			var set letters
			if err := json.Unmarshal(object.Bytes(), &set); err != nil {
				return err
			}
			fields := reflect.ValueOf(set)
			matched := false
			for i := range fields.NumField() {
				if value := fields.Field(i).Interface().(*int32); value != nil {
					letter := strings.ToLower(fields.Type().Field(i).Name)
					found = append(found, fmt.Sprintf("U+%04X %s", *value, letter))
					left[rune(*value)] = true
					matched = true
				}
			}
			if !matched {
				break
			}
		}
	}
	sort.Strings(found)
	for _, line := range found {
		fmt.Fprintln(out, line)
	}
	return nil
}

// queries reads each query string as net/http's server does (url.ParseRequestURI of the request
// target) and reports the parameters Docker (rollback) and Nomad (namespace) read.
func queries(in *bufio.Scanner, out *bufio.Writer) error {
	encoder := json.NewEncoder(out)
	for in.Scan() {
		raw, err := hex.DecodeString(in.Text())
		if err != nil {
			return err
		}
		line := map[string]string{}
		if u, err := url.ParseRequestURI("/v1/job/api/scale?" + string(raw)); err != nil {
			line["error"] = err.Error()
		} else {
			q := u.Query()
			line["rollback"], line["namespace"] = q.Get("rollback"), q.Get("namespace")
		}
		if err := encoder.Encode(line); err != nil {
			return err
		}
	}
	return in.Err()
}

func main() {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if len(os.Args) > 1 && os.Args[1] == "query" {
		in := bufio.NewScanner(os.Stdin)
		if err := queries(in, out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "folds" {
		if err := folds(out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 16<<20)
	encoder := json.NewEncoder(out)
	for in.Scan() {
		body, err := hex.DecodeString(in.Text())
		if err != nil {
			fmt.Fprintln(os.Stderr, "a line that is not hexadecimal:", err)
			os.Exit(2)
		}
		line := map[string]any{
			"docker": docker(body),
			"nomad":  nomadScale(body),
			"go":     goCustom(body),
			"exact":  exactCustom(body),
			"kubernetes": map[string]any{
				"put":       modes(body, put),
				"merge":     modes(body, merge),
				"strategic": modes(body, strategic),
			},
		}
		if err := encoder.Encode(line); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
