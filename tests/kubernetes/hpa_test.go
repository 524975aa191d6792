package kubernetes

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The names the API server's aggregator and KEDA's components know each other by. The metrics
// adapter is reached as keda-metrics-apiserver.keda.svc (the name the aggregator checks in its
// serving certificate), through a Service of type ExternalName that points at loopback: no
// kube-proxy or cluster network is needed.
const (
	kedaNamespace     = "keda"
	kedaAdapterName   = "keda-metrics-apiserver"
	externalMetricsAS = "v1beta1.external.metrics.k8s.io"
)

// kedaStack is KEDA v2.21's operator and metrics adapter, built from the module proxy by `make
// kubernetes-setup` (tests/kubernetes/keda, a module of its own), run on loopback against the
// test's API server with the admin's kubeconfig.
type kedaStack struct {
	operator, adapter *process
}

func (k *kedaStack) stop() {
	if k == nil {
		return
	}
	k.adapter.stop()
	k.operator.stop()
}

// startKEDA starts the operator (it reads ScaledObjects, makes their HPAs and asks the external
// scaler for metrics) and the metrics adapter (external.metrics.k8s.io, which the HPA controller
// reads through the API server's aggregator), registers the adapter's APIService and waits until
// the API server reports it available.
func (c *cluster) startKEDA() (*kedaStack, error) {
	dir := filepath.Join(c.dir, "keda")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := newAuthority("keda-ca")
	if err != nil {
		return nil, err
	}
	// One certificate for both ends of the operator's gRPC metrics service (mutual TLS) and for
	// the adapter's HTTPS: KEDA's own chart issues one secret for all three the same way.
	if err := ca.writeKEDACert(dir, []string{
		"localhost", kedaAdapterName + "." + kedaNamespace + ".svc", "keda-operator." + kedaNamespace + ".svc",
	}); err != nil {
		return nil, err
	}
	ports := make([]int, 5)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	grpcPort, operatorMetrics, operatorProbe, adapterPort, adapterMetrics := ports[0], ports[1], ports[2], ports[3], ports[4]
	environment := []string{
		"KUBECONFIG=" + c.kubeconfigs[admin],
		"POD_NAMESPACE=" + kedaNamespace,
		"KEDA_CLUSTER_OBJECT_NAMESPACE=" + kedaNamespace,
		"WATCH_NAMESPACE=",
	}
	k := &kedaStack{}
	k.operator, err = startProcess(c.dir, "keda-operator", filepath.Join(c.bin, "keda-operator"), []string{
		"--leader-elect=false",
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", operatorMetrics),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", operatorProbe),
		"--metrics-service-bind-address", fmt.Sprintf("127.0.0.1:%d", grpcPort),
		"--cert-dir", dir, "--ca-dir", dir,
		"--enable-cert-rotation=false", "--enable-webhook-patching=false", "--enable-apiservice-patching=false",
	}, nil, environment...)
	if err != nil {
		return nil, err
	}
	if err := waitFor(k.operator, 120*time.Second, func() error {
		return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", operatorProbe), nil)
	}); err != nil {
		k.stop()
		return nil, err
	}
	k.adapter, err = startProcess(c.dir, "keda-adapter", filepath.Join(c.bin, "keda-adapter"), []string{
		"--secure-port", fmt.Sprint(adapterPort), "--bind-address", "127.0.0.1",
		"--cert-dir", dir, "--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-private-key-file", filepath.Join(dir, "tls.key"),
		"--metrics-service-address", fmt.Sprintf("127.0.0.1:%d", grpcPort),
		"--port", fmt.Sprint(adapterMetrics),
		"--lister-kubeconfig", c.kubeconfigs[admin],
		"--authentication-kubeconfig", c.kubeconfigs[admin],
		"--authorization-kubeconfig", c.kubeconfigs[admin],
	}, nil, environment...)
	if err != nil {
		k.stop()
		return nil, err
	}
	registration := fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  type: ExternalName
  externalName: localhost
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: %[3]s}
spec:
  service: {name: %[1]s, namespace: %[2]s, port: %[4]d}
  group: external.metrics.k8s.io
  version: v1beta1
  caBundle: %[5]s
  groupPriorityMinimum: 100
  versionPriority: 100
`, kedaAdapterName, kedaNamespace, externalMetricsAS, adapterPort, base64.StdEncoding.EncodeToString(ca.certPEM))
	if _, stderr, err := c.kubectlIn(admin, registration, "apply", "-f", "-"); err != nil {
		k.stop()
		return nil, fmt.Errorf("registering the external metrics API: %v\n%s", err, stderr)
	}
	// Available: the aggregator reached the adapter through the Service and read its discovery.
	if err := waitFor(k.adapter, 120*time.Second, func() error {
		stdout, stderr, err := c.kubectl(admin, "get", "apiservice", externalMetricsAS,
			"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		if err != nil || strings.TrimSpace(stdout) != "True" {
			return fmt.Errorf("APIService %s not available: %q %v %s", externalMetricsAS, stdout, err, stderr)
		}
		return nil
	}); err != nil {
		k.stop()
		return nil, err
	}
	return k, nil
}

// writeKEDACert writes ca.crt, tls.crt and tls.key into dir, the names KEDA reads from its
// certificate folder: a certificate for client and server authentication, for names and 127.0.0.1.
func (a *authority) writeKEDACert(dir string, names []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	template := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     names,
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"ca.crt": a.certPEM, "tls.crt": pemBlock("CERTIFICATE", der), "tls.key": pemBlock("PRIVATE KEY", keyDER),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// hpaReplicas is the desired and current replica counts of the HPA KEDA made for the
// ScaledObject NAMESPACE/gateway (keda-hpa-gateway); an error while it does not exist.
func hpaReplicas(namespace string) (desired, current int32, err error) {
	hpa, err := env.client.AutoscalingV2().HorizontalPodAutoscalers(namespace).Get(context.Background(), "keda-hpa-gateway", getOptions)
	if err != nil {
		return 0, 0, err
	}
	return hpa.Status.DesiredReplicas, hpa.Status.CurrentReplicas, nil
}

// The HPA for real: KEDA's operator and metrics adapter, the API server's aggregator and the
// horizontal-pod-autoscaler controller settle the Deployment on the unit's decision (3 -> 5), the
// HPA's own change passing the webhook. Then the case that motivated the admitted count: the
// evidence says fewer replicas would do and the collected count still says 3 (the collector has
// not seen the change), yet inside the contract's scale-down cooldown (300 s) the decision holds
// at 5, and so does the HPA: it never takes the admitted change back.
func TestHPASettlesOnTheDecisionThroughKEDA(t *testing.T) {
	ctx := context.Background()
	k, err := env.startKEDA()
	if err != nil {
		t.Fatalf("KEDA could not start: %v", err)
	}
	defer k.stop()
	// Unregistered first (deferred calls run last-in first-out), so that the tests after this one
	// do not meet an aggregated API whose server has gone.
	defer func() {
		if _, stderr, err := env.kubectl(admin, "delete", "apiservice", externalMetricsAS, "--ignore-not-found"); err != nil {
			t.Errorf("unregistering %s: %v\n%s", externalMetricsAS, err, stderr)
		}
	}()

	workload(t, "autoscaled", optedIn)
	if err := env.service.push("autoscaled", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	// As deploy/kubernetes/scaledobject-zentinelle-gateway.yaml, with the service's loopback
	// scaler address, no TLS (the test's KEDA listener is plain) and a 1 s polling interval.
	scaledObject := fmt.Sprintf(`apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: gateway, namespace: autoscaled}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: gateway}
  minReplicaCount: 2
  maxReplicaCount: 12
  pollingInterval: 1
  cooldownPeriod: 300
  advanced:
    horizontalPodAutoscalerConfig:
      behavior:
        scaleUp: {stabilizationWindowSeconds: 0}
        scaleDown: {stabilizationWindowSeconds: 0}
  triggers:
    - type: external
      metricType: AverageValue
      metadata:
        scalerAddress: %s
        unit: gateway
`, env.service.keda)
	if _, stderr, err := env.kubectlIn(admin, scaledObject, "apply", "-f", "-"); err != nil {
		t.Fatalf("ScaledObject: %v\n%s", err, stderr)
	}

	// KEDA makes the HPA; the HPA controller reads the decision's metric through the aggregator
	// and scales 3 -> 5 through the scale subresource, which the webhook admits.
	began := time.Now()
	deadline := began.Add(120 * time.Second)
	for replicas(t, "autoscaled") != 5 {
		if time.Now().After(deadline) {
			desired, current, err := hpaReplicas("autoscaled")
			t.Fatalf("the HPA did not settle on 5 in 120 s (HPA desired %d current %d, %v)\noperator:\n%s\nadapter:\n%s",
				desired, current, err, k.operator.tail(), k.adapter.tail())
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("the HPA scaled 3 -> 5 %s after the ScaledObject was applied", time.Since(began).Round(time.Millisecond))
	lines, err := env.service.auditLines("autoscaled", "admission", 1)
	if err != nil {
		t.Fatal(err)
	}
	admitted := false
	for _, line := range lines {
		detail, _ := line["detail"].(map[string]any)
		change, _ := detail["change"].(map[string]any)
		if line["allowed"] == true && detail["dry_run"] == false && fmt.Sprint(change["from"]) == "3" && fmt.Sprint(change["to"]) == "5" {
			admitted = true
		}
	}
	if !admitted {
		t.Fatalf("the webhook did not admit the HPA's 3 -> 5: %v", lines)
	}

	// Fewer replicas would do now (in_flight 100 needs 1, the floor is 2), and the collector's
	// count lags at 3. At 3 the decision would be hold (the cooldown of the admission) and its
	// metric would take the HPA back to 3; at the admitted 5 it is hold at 5.
	low := gatewayEvidence(false)
	signal := low["signal"].(map[string]any)
	signal["value"] = 100
	if err := env.service.push("autoscaled", low); err != nil {
		t.Fatal(err)
	}
	// Twenty seconds: ten HPA syncs (2 s) and twenty KEDA polls. The HPA must not even ask for
	// fewer (its scale-down would reach the webhook, which judges it at the review's count, 5).
	for watched := time.Now(); time.Since(watched) < 20*time.Second; time.Sleep(500 * time.Millisecond) {
		desired, current, err := hpaReplicas("autoscaled")
		if got := replicas(t, "autoscaled"); got != 5 || err != nil || desired != 5 {
			t.Fatalf("inside the cooldown: the Deployment has %d, the HPA desires %d (current %d, %v)", got, desired, current, err)
		}
	}
	// Nor did it try: a scale-down the HPA asked for would have reached the webhook and been
	// denied there (judged at the review's count, 5). Without the admitted count KEDA's metric
	// would stand on the lagging 3 until that denied review corrected it.
	lines, err = env.service.auditLines("autoscaled", "admission", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range lines {
		detail, _ := line["detail"].(map[string]any)
		if line["allowed"] != true && detail["dry_run"] != true {
			t.Fatalf("the HPA asked for another change inside the cooldown: %v", line)
		}
	}
	unit, err := env.service.unit("autoscaled")
	if err != nil {
		t.Fatal(err)
	}
	decision, _ := unit["decision"].(map[string]any)
	if fmt.Sprint(decision["current_replicas"]) != "5" || fmt.Sprint(decision["desired_replicas"]) != "5" {
		t.Fatalf("after the admitted 3 -> 5 and a lagging count of 3, the unit decides %v", decision)
	}
	desired, current, err := hpaReplicas("autoscaled")
	if err != nil || desired != 5 || current != 5 {
		t.Fatalf("the HPA's status after 20 s: desired %d current %d (%v)", desired, current, err)
	}
	hpa, err := env.client.AutoscalingV2().HorizontalPodAutoscalers("autoscaled").Get(ctx, "keda-hpa-gateway", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, metric := range hpa.Status.CurrentMetrics {
		if metric.External != nil && metric.External.Current.AverageValue != nil {
			t.Logf("the HPA reads %s = %s (average per replica, target 1)", metric.External.Metric.Name, metric.External.Current.AverageValue)
		}
	}
}
