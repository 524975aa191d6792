package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var getOptions = metav1.GetOptions{}

func execCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}

// The units of the scenarios, one namespace each so that no scenario sees another's cooldown.
var units = []string{"shop", "edit", "frozen", "anon", "later", "down", "autoscaled"}

// service is the real `scale-units serve`: HTTPS webhook (its certificate from the webhook CA),
// admission reviews authenticated by the API server's client certificate (--webhook-client-ca),
// the override group, the KEDA listener, and the decision audit log in a file.
type service struct {
	bin, dir, units string
	process         *process
	http, keda      string // host:port, both on 127.0.0.1
	audit           string
	client          *http.Client
	startedAt       time.Time
}

// start starts the service on http (a restart reuses the previous addresses; "" picks ports).
func (s *service) start(c *cluster, address string) error {
	if address == "" {
		address, s.keda = "127.0.0.1:0", "127.0.0.1:0"
		for _, namespace := range units {
			if err := writeContract(c.root, s.units, namespace); err != nil {
				return err
			}
		}
	}
	s.audit = filepath.Join(s.dir, "audit.log")
	s.startedAt = time.Now()
	reader, writer, err := os.Pipe()
	if err != nil {
		return err
	}
	s.process, err = startProcess(s.dir, "scale-units", s.bin, []string{
		"serve", "--listen", address, "--webhook", "--tls-cert", c.webhookCert, "--tls-key", c.webhookKey,
		"--units", s.units, "--units-interval-ms", "200",
		"--webhook-client-ca", c.pki("apiserver-webhook-client-ca.crt"),
		"--override-group", overrides, "--keda-listen", s.keda,
		"--audit-log", s.audit, "--shutdown-delay-ms", "0", "--drain-timeout-ms", "2000",
	}, writer, "SCALE_UNITS_CACHE_DIR="+filepath.Join(os.TempDir(), "scale-units-test-cache"))
	_ = writer.Close()
	if err != nil {
		_ = reader.Close()
		return err
	}
	stdout := bufio.NewReader(reader)
	// The first start compiles the component and runs the conformance gate: minutes on a loaded
	// machine.
	keda, err := readLine(stdout, 300*time.Second)
	if err == nil {
		var line string
		line, err = readLine(stdout, 60*time.Second)
		s.http = strings.TrimPrefix(line, "listening on ")
	}
	if err != nil || !strings.HasPrefix(keda, "keda external scaler listening on ") {
		s.process.stop()
		return fmt.Errorf("scale-units serve did not start (%q, %v):\n%s", keda, err, s.process.tail())
	}
	s.keda = strings.TrimPrefix(keda, "keda external scaler listening on ")
	go func() {
		_, _ = io.Copy(io.Discard, reader)
		_ = reader.Close()
	}()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(c.webhookCA.certPEM)
	s.client = &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
	}
	return nil
}

func (s *service) stop() {
	if s.process != nil {
		s.process.stop()
	}
}

// writeContract writes the gateway's contract (examples/api-gateway) as NAMESPACE/gateway.
func writeContract(root, dir, namespace string) error {
	data, err := os.ReadFile(filepath.Join(root, "examples", "api-gateway", "contract.json"))
	if err != nil {
		return err
	}
	var contract map[string]any
	if err := json.Unmarshal(data, &contract); err != nil {
		return err
	}
	contract["unit_ref"] = "unit:" + namespace + "/gateway"
	data, err = json.Marshal(contract)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, namespace+".gateway.json"), data, 0o600)
}

// request sends one request to the service; returns the status and the body.
func (s *service) request(method, path string, body any) (int, []byte, error) {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		reader = bytes.NewReader(data)
	}
	request, err := http.NewRequest(method, "https://"+s.http+path, reader)
	if err != nil {
		return 0, nil, err
	}
	request.Header.Set("content-type", "application/json")
	response, err := s.client.Do(request)
	if err != nil {
		return 0, nil, err
	}
	defer response.Body.Close()
	data, err := io.ReadAll(response.Body)
	return response.StatusCode, data, err
}

// push stores the observations of NAMESPACE/gateway.
func (s *service) push(namespace string, observations map[string]any) error {
	status, body, err := s.request("PUT", "/v1/units/"+namespace+"/gateway/observations", observations)
	if err == nil && status != 200 {
		err = fmt.Errorf("push %s: %d %s", namespace, status, body)
	}
	return err
}

// overrides is scale_units_admission_overrides_total of the override group, from /metrics (0
// before the first).
func (s *service) overrides(t *testing.T) int {
	t.Helper()
	status, body, err := s.request("GET", "/metrics", nil)
	if err != nil || status != 200 {
		t.Fatalf("/metrics: %d %v", status, err)
	}
	prefix := `scale_units_admission_overrides_total{group="` + overrides + `"} `
	for _, line := range strings.Split(string(body), "\n") {
		if count, found := strings.CutPrefix(line, prefix); found {
			n, err := strconv.Atoi(count)
			if err != nil {
				t.Fatalf("/metrics: %q", line)
			}
			return n
		}
	}
	return 0
}

// unit is GET /v1/units/NAMESPACE/gateway, decoded.
func (s *service) unit(namespace string) (map[string]any, error) {
	status, body, err := s.request("GET", "/v1/units/"+namespace+"/gateway", nil)
	if err != nil {
		return nil, err
	}
	if status != 200 {
		return nil, fmt.Errorf("unit %s: %d %s", namespace, status, body)
	}
	var unit map[string]any
	return unit, json.Unmarshal(body, &unit)
}

// auditLines are the audit log's lines about unit NAMESPACE/gateway from source (e.g.
// "admission"), waiting up to 10 s for at least want of them (the writer flushes when idle).
func (s *service) auditLines(namespace, source string, want int) ([]map[string]any, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(s.audit)
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		var lines []map[string]any
		for _, text := range strings.Split(string(data), "\n") {
			var line map[string]any
			if json.Unmarshal([]byte(text), &line) != nil {
				continue
			}
			if line["source"] == source && strings.Contains(fmt.Sprint(line["unit"]), namespace+"/gateway") {
				lines = append(lines, line)
			}
		}
		if len(lines) >= want || time.Now().After(deadline) {
			return lines, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gatewayEvidence is what the gateway needs for a fresh decision at in_flight 640 and 3 replicas:
// scale_up 3 -> 5 (server/tests/kubernetes/mod.rs, gateway_push), fresh for ten minutes.
func gatewayEvidence(overloaded bool) map[string]any {
	now := time.Now().UTC()
	window := func(source string) map[string]any {
		return map[string]any{
			"observed_at":   now.Add(-10 * time.Second).Format(time.RFC3339),
			"expires_at":    now.Add(10 * time.Minute).Format(time.RFC3339),
			"source_ref":    source,
			"source_digest": "sha256:7cac69ff414f57298537a937081a6ab323556b56916fc3fa283f6e86f6b3bcf1",
		}
	}
	with := func(base map[string]any, fields map[string]any) map[string]any {
		for key, value := range fields {
			base[key] = value
		}
		return base
	}
	capacity := func(axis string, allocatable int) map[string]any {
		return with(window("capacity:gateway/"+axis), map[string]any{"axis": axis, "allocatable": allocatable, "reserved": 0, "used": 0})
	}
	safety := with(window("safety:gateway/shedder"), map[string]any{"overloaded": overloaded, "noisy_neighbor": false})
	if overloaded {
		safety["reason_ref"] = "shedder:overload"
	}
	return map[string]any{
		"signal":           with(window("metrics:gateway/in-flight"), map[string]any{"signal": "in_flight", "value": 640}),
		"capacities":       []any{capacity("cpu_milli", 16000), capacity("memory_mib", 65536), capacity("session_slots", 4000)},
		"safety":           safety,
		"current_replicas": 3,
	}
}
