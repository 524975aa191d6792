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
	"sigs.k8s.io/yaml"
)

var getOptions = metav1.GetOptions{}

func execCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}

// The fields of the shipped serve.yaml a test may change: addresses, and the files a pod reads
// from its mounted Secrets and ConfigMaps (certificates, tokens, the contracts folder), which
// this process reads from the run's folder. Every other field is the shipped one.
var overridable = map[string]bool{
	"listen": true, "keda_listen": true, "envoy_listen": true,
	"tls_cert": true, "tls_key": true,
	"keda_tls_cert": true, "keda_tls_key": true, "keda_client_ca": true,
	"token_file": true, "push_token_file": true, "read_token_file": true,
	"units": true, "policy": true,
}

// service is the real `scale-units serve`, run with the shipped serve.yaml (deploy/kubernetes/
// serve-config.yaml) and the shipped ServiceAccount's token: only the fields of overridable
// differ. Its stdout (the audit log, as shipped) is kept in a file.
type service struct {
	bin, dir, units string
	process         *process
	http, keda      string // host:port, both on 127.0.0.1
	audit           string // the process's stdout
	client          *http.Client
	tokens          map[string]string // role -> token
	config          map[string]any    // the serve.yaml it runs
	kedaCA          *authority
}

// pickAddresses chooses the service's loopback ports (the webhook is installed pointing at them
// before the service starts).
func (s *service) pickAddresses() error {
	http, err := freePort()
	if err != nil {
		return err
	}
	keda, err := freePort()
	if err != nil {
		return err
	}
	s.http, s.keda = fmt.Sprintf("127.0.0.1:%d", http), fmt.Sprintf("127.0.0.1:%d", keda)
	return nil
}

// shippedConfig is the serve.yaml of deploy/kubernetes/serve-config.yaml.
func shippedConfig(root string) (map[string]any, error) {
	data, err := os.ReadFile(filepath.Join(root, "deploy", "kubernetes", "serve-config.yaml"))
	if err != nil {
		return nil, err
	}
	var configMap struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &configMap); err != nil {
		return nil, err
	}
	var config map[string]any
	if err := yaml.Unmarshal([]byte(configMap.Data["serve.yaml"]), &config); err != nil {
		return nil, err
	}
	return config, nil
}

// start starts the service on its addresses: the shipped configuration with the overridable
// fields pointed at this run's files, $KUBECONFIG the shipped ServiceAccount's token (what a pod
// of the shipped Deployment mounts), and waits until /ready (the watch is in step).
func (s *service) start(c *cluster) error {
	shipped, err := shippedConfig(c.root)
	if err != nil {
		return fmt.Errorf("the shipped serve.yaml: %w", err)
	}
	if shipped["kubernetes"] != true {
		return fmt.Errorf("the shipped serve.yaml does not watch the API server (kubernetes: true): %v", shipped)
	}
	if err := os.MkdirAll(s.units, 0o700); err != nil {
		return err
	}
	files := filepath.Join(s.dir, "files")
	if err := os.MkdirAll(files, 0o700); err != nil {
		return err
	}
	config := map[string]any{}
	for key, value := range shipped {
		config[key] = value
	}
	set := func(key string, value any) {
		if _, shippedField := shipped[key]; shippedField {
			config[key] = value
		}
	}
	set("listen", s.http)
	set("keda_listen", s.keda)
	cert, key, err := c.webhookCA.writeIssued(files, "webhook", nil, true)
	if err != nil {
		return err
	}
	set("tls_cert", cert)
	set("tls_key", key)
	if s.kedaCA == nil {
		if s.kedaCA, err = newAuthority("scale-units-ca"); err != nil {
			return err
		}
	}
	kedaCert, kedaKey, err := s.kedaCA.writeIssued(files, "keda-server", nil, true)
	if err != nil {
		return err
	}
	kedaCA := filepath.Join(files, "keda-ca.crt")
	if err := os.WriteFile(kedaCA, s.kedaCA.certPEM, 0o600); err != nil {
		return err
	}
	set("keda_tls_cert", kedaCert)
	set("keda_tls_key", kedaKey)
	set("keda_client_ca", kedaCA)
	if s.tokens == nil {
		s.tokens = map[string]string{}
	}
	for field, role := range map[string]string{"token_file": "admin", "push_token_file": "push", "read_token_file": "read"} {
		if _, shippedField := shipped[field]; !shippedField {
			continue
		}
		token := fmt.Sprintf("test-%s-token-%d", role, time.Now().UnixNano())
		if held, ok := s.tokens[role]; ok {
			token = held
		}
		s.tokens[role] = token
		path := filepath.Join(files, role+".token")
		if err := os.WriteFile(path, []byte(token), 0o600); err != nil {
			return err
		}
		set(field, path)
	}
	set("units", s.units)
	set("policy", filepath.Join(c.root, "target", "scale-units", "scale_units_evaluator.wasm"))
	for key := range config {
		if fmt.Sprint(config[key]) != fmt.Sprint(shipped[key]) && !overridable[key] {
			return fmt.Errorf("the test changed %s of the shipped configuration", key)
		}
	}
	s.config = config
	data, err := yaml.Marshal(config)
	if err != nil {
		return err
	}
	configFile := filepath.Join(s.dir, "serve.yaml")
	if err := os.WriteFile(configFile, data, 0o600); err != nil {
		return err
	}
	kubeconfig, err := c.serviceAccountKubeconfig()
	if err != nil {
		return err
	}
	s.audit = filepath.Join(s.dir, "stdout.log")
	stdout, err := os.OpenFile(s.audit, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.process, err = startProcess(s.dir, "scale-units", s.bin, []string{"serve", "--config", configFile}, stdout,
		"KUBECONFIG="+kubeconfig, "SCALE_UNITS_CACHE_DIR="+filepath.Join(os.TempDir(), "scale-units-test-cache"))
	_ = stdout.Close()
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(c.webhookCA.certPEM)
	s.client = &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
	}
	// The first start compiles the component and runs the conformance gate: minutes on a loaded
	// machine; then the watch lists the cluster.
	return waitFor(s.process, 300*time.Second, func() error {
		status, body, err := s.request("GET", "/ready", nil)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("/ready: %d %s", status, body)
		}
		return nil
	})
}

func (s *service) stop() {
	if s.process != nil {
		s.process.stop()
	}
}

// serviceAccountKubeconfig is a kubeconfig with a token of the shipped ServiceAccount
// (scale-units/scale-units), as its pod would mount it: the service has exactly the shipped RBAC.
func (c *cluster) serviceAccountKubeconfig() (string, error) {
	token, stderr, err := c.kubectl(admin, "-n", "scale-units", "create", "token", "scale-units", "--duration", "24h")
	if err != nil {
		return "", fmt.Errorf("a token of the shipped ServiceAccount: %v\n%s", err, stderr)
	}
	path := filepath.Join(c.dir, "scale-units-sa.kubeconfig")
	return path, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
  - name: test
    cluster:
      server: %s
      certificate-authority: %s
users:
  - name: scale-units
    user:
      token: %s
contexts:
  - name: test
    context: {cluster: test, user: scale-units}
current-context: test
`, c.apiserverURL, c.pki("cluster-ca.crt"), strings.TrimSpace(token))), 0o600)
}

// request sends one request to the service with the role's token (push for PUT, read
// otherwise); returns the status and the body.
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
	role := "read"
	if method == "PUT" || method == "POST" {
		role = "push"
	}
	if token := s.tokens[role]; token != "" {
		request.Header.Set("authorization", "Bearer "+token)
	}
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

// metric is the sum of the service's /metrics samples whose line starts with prefix.
func (s *service) metric(t *testing.T, prefix string) int {
	t.Helper()
	status, body, err := s.request("GET", "/metrics", nil)
	if err != nil || status != 200 {
		t.Fatalf("/metrics: %d %v", status, err)
	}
	total := 0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		fields := strings.Fields(line)
		n, err := strconv.Atoi(fields[len(fields)-1])
		if err != nil {
			t.Fatalf("/metrics: %q", line)
		}
		total += n
	}
	return total
}

// overrides is scale_units_admission_overrides_total of the override group (0 before the first).
func (s *service) overrides(t *testing.T) int {
	return s.metric(t, `scale_units_admission_overrides_total{group="`+overrides+`"} `)
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

// auditLines are the audit log's lines about unit NAMESPACE/gateway from source ("admission",
// "watch", "keda"), waiting up to 10 s for at least want of them (the writer flushes when idle).
func (s *service) auditLines(namespace, source string, want int) ([]map[string]any, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		file, err := os.Open(s.audit)
		if err != nil {
			return nil, err
		}
		var lines []map[string]any
		scanner := bufio.NewScanner(file)
		scanner.Buffer(make([]byte, 1<<20), 1<<22)
		for scanner.Scan() {
			var line map[string]any
			if json.Unmarshal(scanner.Bytes(), &line) != nil {
				continue
			}
			if line["source"] == source && strings.Contains(fmt.Sprint(line["unit"]), namespace+"/gateway") {
				lines = append(lines, line)
			}
		}
		_ = file.Close()
		if len(lines) >= want || time.Now().After(deadline) {
			return lines, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gatewayEvidence is what the gateway needs for a fresh decision at in_flight 640 and 3 replicas:
// scale_up 3 -> 5, fresh for ten minutes.
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
		"signal":     with(window("metrics:gateway/in-flight"), map[string]any{"signal": "in_flight", "value": 640}),
		"capacities": []any{capacity("cpu_milli", 16000), capacity("memory_mib", 65536), capacity("session_slots", 4000)},
		"safety":     safety,
	}
}

// withSignal is evidence with the signal's value replaced.
func withSignal(evidence map[string]any, value int) map[string]any {
	signal := evidence["signal"].(map[string]any)
	signal["value"] = value
	return evidence
}
