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
	"sigs.k8s.io/yaml"
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

// kedaClientSecret gives KEDA the client certificate the shipped ClusterTriggerAuthentication
// reads (Secret scale-units-keda-client in KEDA's namespace: ca.crt, tls.crt, tls.key), issued
// by the CA the service's keda_client_ca trusts — what cert-manager does in a cluster.
func (c *cluster) kedaClientSecret() error {
	dir := filepath.Join(c.dir, "keda-client")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := c.service.kedaCA.writeKEDACert(dir, []string{"keda-operator.keda.svc"}); err != nil {
		return err
	}
	_, _, _ = c.kubectl(admin, "-n", kedaNamespace, "delete", "secret", "scale-units-keda-client", "--ignore-not-found")
	_, stderr, err := c.kubectl(admin, "-n", kedaNamespace, "create", "secret", "generic", "scale-units-keda-client",
		"--from-file=ca.crt="+filepath.Join(dir, "ca.crt"), "--from-file=tls.crt="+filepath.Join(dir, "tls.crt"),
		"--from-file=tls.key="+filepath.Join(dir, "tls.key"))
	if err != nil {
		return fmt.Errorf("KEDA's client certificate: %v\n%s", err, stderr)
	}
	return nil
}

// scaledObject is deploy/kubernetes/scaledobject-zentinelle-gateway.yaml for NAMESPACE/gateway:
// the shipped ClusterTriggerAuthentication (mutual TLS), the service's loopback address, a 1 s
// polling interval and the given minimum.
func scaledObject(t *testing.T, namespace string, minimum int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.root, "deploy", "kubernetes", "scaledobject-zentinelle-gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var object map[string]any
	if err := yaml.Unmarshal(data, &object); err != nil {
		t.Fatal(err)
	}
	object["metadata"] = map[string]any{"name": "gateway", "namespace": namespace}
	spec := object["spec"].(map[string]any)
	spec["pollingInterval"] = 1
	spec["minReplicaCount"] = minimum
	trigger := spec["triggers"].([]any)[0].(map[string]any)
	trigger["metadata"].(map[string]any)["scalerAddress"] = env.service.keda
	out, err := yaml.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// The HPA for real, as shipped: KEDA's operator (mutual TLS to the service through the shipped
// ClusterTriggerAuthentication) and metrics adapter, the API server's aggregator and the
// horizontal-pod-autoscaler controller settle the Deployment on the unit's decision (3 -> 5),
// the HPA's own change passing the webhook. Then the case the watch exists for: the evidence
// says fewer replicas would do, yet for the whole scale-down cooldown (60 s, watched to its end)
// KEDA and the HPA keep 5, and after it the HPA moves. Then the modes for the HPA: a minimum the
// decision does not allow is refused under Enforce (the HPA's FailedRescale event carries the
// numbers) and let through under Monitor (a would-be denial Event on the Deployment), the mode
// changed without a restart.
func TestHPASettlesOnTheDecisionThroughKEDA(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	workload(t, "autoscaled", optedIn)
	unit(t, "autoscaled", unitOptions{upCooldown: 60, downCool: 60})
	if err := env.service.push("autoscaled", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
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
	if err := env.kedaClientSecret(); err != nil {
		t.Fatal(err)
	}
	waitCooldown(t, "autoscaled", 60)
	if _, stderr, err := env.kubectlIn(admin, scaledObject(t, "autoscaled", 2), "apply", "-f", "-"); err != nil {
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
	status := waitReplicasSeen(t, "autoscaled", 5)
	seen, err := time.Parse(time.RFC3339, fmt.Sprint(status["lastScaleTime"]))
	if err != nil {
		t.Fatal(err)
	}
	// Fewer would do now (in_flight 100 at 5 replicas): scale_down, after the cooldown.
	if err := env.service.push("autoscaled", withSignal(gatewayEvidence(false), 100)); err != nil {
		t.Fatal(err)
	}
	// The whole cooldown: KEDA's metric and the HPA stay on 5, the HPA never even asks for less.
	end := seen.Add(60 * time.Second)
	for time.Now().Before(end.Add(-time.Second)) {
		desired, current, err := hpaReplicas("autoscaled")
		if got := replicas(t, "autoscaled"); got != 5 || err != nil || desired != 5 {
			t.Fatalf("%s into the cooldown: the Deployment has %d, the HPA desires %d (current %d, %v)",
				time.Since(seen).Round(time.Second), got, desired, current, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	lines, err := env.service.auditLines("autoscaled", "admission", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range lines {
		detail, _ := line["detail"].(map[string]any)
		change, _ := detail["change"].(map[string]any)
		if line["allowed"] != true && detail["dry_run"] != true && fmt.Sprint(change["from"]) == "5" {
			t.Fatalf("the HPA asked for another change inside the cooldown: %v", line)
		}
	}
	// After it, the decision lets the HPA move down (one step of 1).
	deadline = time.Now().Add(60 * time.Second)
	for replicas(t, "autoscaled") >= 5 {
		if time.Now().After(deadline) {
			hpa, err := env.client.AutoscalingV2().HorizontalPodAutoscalers("autoscaled").Get(ctx, "keda-hpa-gateway", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Fatalf("the HPA did not move after the cooldown (desired %d current %d, metrics %+v, conditions %+v): %v\nadapter:\n%s",
				hpa.Status.DesiredReplicas, hpa.Status.CurrentReplicas, hpa.Status.CurrentMetrics, hpa.Status.Conditions, scaleUnitStatus(t, "autoscaled"), k.adapter.tail())
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("after the cooldown the HPA moved to %d, %s after the change was seen", replicas(t, "autoscaled"), time.Since(seen).Round(time.Second))

	// A minimum the decision does not allow: the HPA asks for 9, Enforce refuses it, and the
	// HPA's own event (what `kubectl describe hpa` shows) carries the numbers.
	if _, stderr, err := env.kubectlIn(admin, scaledObject(t, "autoscaled", 9), "apply", "-f", "-"); err != nil {
		t.Fatalf("ScaledObject: %v\n%s", err, stderr)
	}
	deadline = time.Now().Add(60 * time.Second)
	var note string
	for note == "" {
		list, err := env.client.CoreV1().Events("autoscaled").List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedRescale"})
		if err != nil {
			t.Fatal(err)
		}
		for _, event := range list.Items {
			if strings.Contains(event.Message, "replicas denied") {
				note = event.Message
			}
		}
		if time.Now().After(deadline) {
			all, _ := env.client.CoreV1().Events("autoscaled").List(ctx, metav1.ListOptions{})
			var notes []string
			for _, event := range all.Items {
				notes = append(notes, event.InvolvedObject.Kind+" "+event.Reason+": "+event.Message)
			}
			hpa, _ := env.client.AutoscalingV2().HorizontalPodAutoscalers("autoscaled").Get(ctx, "keda-hpa-gateway", metav1.GetOptions{})
			so, _, _ := env.kubectl(admin, "-n", "autoscaled", "get", "scaledobject", "gateway", "-o", "yaml")
			t.Fatalf("no FailedRescale event of the HPA naming the change; events %v; HPA min %d conditions %+v desired %d\n%s", notes, *hpa.Spec.MinReplicas, hpa.Status.Conditions, hpa.Status.DesiredReplicas, so)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("the HPA's FailedRescale: %s", note)
	if !strings.Contains(note, "scale-decision:") || !strings.Contains(note, "the decision is") {
		t.Errorf("the HPA's event does not carry the decision's numbers: %s", note)
	}
	// Monitor, without a restart: the HPA's 9 goes through, and the would-be denial is an Event
	// on the Deployment.
	if _, stderr, err := env.kubectl(admin, "-n", "autoscaled", "patch", "scaleunit", "gateway", "--type=merge", "-p", `{"spec":{"mode":"Monitor"}}`); err != nil {
		t.Fatalf("kubectl patch scaleunit: %v %s", err, stderr)
	}
	deadline = time.Now().Add(60 * time.Second)
	for replicas(t, "autoscaled") != 9 {
		if time.Now().After(deadline) {
			t.Fatalf("under Monitor the HPA's 9 did not go through: %v", scaleUnitStatus(t, "autoscaled"))
		}
		time.Sleep(250 * time.Millisecond)
	}
	waitEvent(t, "autoscaled", "Deployment", "gateway", "ScaleWouldBeRefused", "Monitor", "-> 9 replicas")
}
