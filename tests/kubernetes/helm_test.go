package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The Helm chart (deploy/helm/scale-units) with the Helm that `make kubernetes-helm` builds from
// the module proxy (helm.sh/helm/v4): linted, rendered with default values into the objects of
// the kustomization (deploy/kubernetes), and installed with default values on the control plane.
//
// The kustomization is already installed (the harness's install()), and most of its objects are
// cluster-scoped or live in cert-manager's and KEDA's namespaces, so the chart is installed as a
// second release, `scale-units-helm` in the namespace `scale-units-helm`: its names derive from
// the release's (the chart's own naming, no override), and every value is the default. What it
// creates is compared, object by object, with what the kustomization created, the release's name
// read as `scale-units`. Its webhook (failurePolicy Fail, no caBundle without cert-manager's
// injector) would refuse replica changes in opted-in namespaces, so the test is not parallel (the
// parallel scenarios run after the serial tests) and uninstalls the release before it returns.

const (
	helmRelease   = "scale-units-helm"
	helmNamespace = "scale-units-helm"
)

// The differences between the chart with default values and the kustomization, each for a reason:
//   - the Namespace: Helm keeps its release in the namespace, so it must exist (made and labelled
//     for Pod Security as deploy/kubernetes/README.md says) before `helm install`; the chart does
//     not render it;
//   - the contracts ConfigMap's data: the kustomization ships the two example units' contract
//     files, the chart none (`contracts: {}`; ScaleUnits are the way in);
//   - the pod template's `checksum/config` annotation: Helm rolls the pods when serve.yaml changes
//     (the kustomization's users run `kubectl rollout restart`);
//   - metadata labels and annotations (Helm's standard labels), but for the webhook's
//     `cert-manager.io/inject-ca-from`, which is compared.
var helmOnlyKustomization = map[string]string{
	"Namespace//scale-units": "the release's namespace is made before the install",
}

func (c *cluster) helmBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(c.bin, "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no helm at %s (run `make kubernetes-helm`): %v", bin, err)
	}
	return bin
}

// helm runs the built Helm as the cluster's admin, with its own cache, config and data folders
// and its own Kubernetes discovery cache (KUBECACHEDIR; by default ~/.kube/cache).
func (c *cluster) helm(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	bin := c.helmBin(t)
	home := filepath.Join(c.dir, "helm")
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cmd := execCommand(ctx, bin, args...)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+c.kubeconfigs[admin],
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECACHEDIR="+filepath.Join(home, "kube-cache"),
	)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func chartDir() string { return filepath.Join(env.root, "deploy", "helm", "scale-units") }

// documents reads a stream of YAML documents (kubectl kustomize's, helm template's), skipping
// empty ones.
func documents(t *testing.T, text string) []map[string]any {
	t.Helper()
	decoder := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	var objects []map[string]any
	for {
		var object map[string]any
		err := decoder.Decode(&object)
		if err == io.EOF {
			return objects
		}
		if err != nil {
			t.Fatalf("a YAML document: %v", err)
		}
		if len(object) > 0 {
			objects = append(objects, object)
		}
	}
}

func objectKey(object map[string]any) string {
	metadata, _ := object["metadata"].(map[string]any)
	namespace, _ := metadata["namespace"].(string)
	return fmt.Sprintf("%v/%s/%v", object["kind"], namespace, metadata["name"])
}

// comparable is object without what the two installs may differ in (see helmOnlyKustomization)
// and what the API server adds (uid, resourceVersion, managedFields, status, a Service's cluster
// IP…); serve.yaml is
// compared as the configuration it is, not as text with comments.
func comparable(t *testing.T, object map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	var copied map[string]any
	if err := json.Unmarshal(data, &copied); err != nil {
		t.Fatal(err)
	}
	delete(copied, "status")
	metadata, _ := copied["metadata"].(map[string]any)
	kept := map[string]any{"name": metadata["name"]}
	if namespace, ok := metadata["namespace"]; ok {
		kept["namespace"] = namespace
	}
	if annotations, ok := metadata["annotations"].(map[string]any); ok {
		if from, ok := annotations["cert-manager.io/inject-ca-from"]; ok {
			kept["annotations"] = map[string]any{"cert-manager.io/inject-ca-from": from}
		}
	}
	copied["metadata"] = kept
	switch copied["kind"] {
	case "Service":
		// Allocated by the API server, one per Service.
		spec := copied["spec"].(map[string]any)
		delete(spec, "clusterIP")
		delete(spec, "clusterIPs")
	case "Deployment":
		template := copied["spec"].(map[string]any)["template"].(map[string]any)
		templateMetadata := template["metadata"].(map[string]any)
		if annotations, ok := templateMetadata["annotations"].(map[string]any); ok {
			delete(annotations, "checksum/config")
			if len(annotations) == 0 {
				delete(templateMetadata, "annotations")
			}
		}
		delete(templateMetadata, "creationTimestamp")
		delete(copied["metadata"].(map[string]any), "generation")
	case "ConfigMap":
		if data, ok := copied["data"].(map[string]any); ok {
			if text, ok := data["serve.yaml"].(string); ok {
				var config map[string]any
				if err := yaml.Unmarshal([]byte(text), &config); err != nil {
					t.Fatalf("serve.yaml: %v", err)
				}
				data["serve.yaml"] = config
			}
		}
		if strings.HasSuffix(fmt.Sprint(kept["name"]), "-contracts") {
			delete(copied, "data")
		}
	}
	return copied
}

// byKey is the objects by kind/namespace/name.
func byKey(t *testing.T, objects []map[string]any) map[string]map[string]any {
	t.Helper()
	keyed := map[string]map[string]any{}
	for _, object := range objects {
		key := objectKey(object)
		if _, twice := keyed[key]; twice {
			t.Fatalf("%s twice", key)
		}
		keyed[key] = object
	}
	return keyed
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

func asJSON(value any) string {
	data, _ := json.MarshalIndent(value, "", "  ")
	return string(data)
}

// `helm lint --strict` passes: the chart's structure, its templates rendered with the default
// values, and no warning.
func TestHelmLint(t *testing.T) {
	stdout, stderr, err := env.helm(t, "lint", "--strict", chartDir())
	if err != nil || !strings.Contains(stdout, "1 chart(s) linted, 0 chart(s) failed") {
		t.Fatalf("helm lint --strict: %v\n%s%s", err, stdout, stderr)
	}
	if strings.Contains(stdout, "[WARNING]") || strings.Contains(stdout, "[ERROR]") {
		t.Errorf("helm lint: %s", stdout)
	}
	// A value that would break the install is refused when rendering, not at run time.
	_, stderr, err = env.helm(t, "template", "scale-units", chartDir(), "-n", "scale-units", "--set", "replicaCount=2")
	if err == nil || !strings.Contains(stderr, "replicaCount > 1 needs redis") {
		t.Errorf("two replicas without Redis rendered: %v\n%s", err, stderr)
	}
	// values.schema.json: a value outside it is refused.
	_, stderr, err = env.helm(t, "template", "scale-units", chartDir(), "-n", "scale-units", "--set", "webhook.failurePolicy=Sometimes")
	if err == nil || !strings.Contains(stderr, "/webhook/failurePolicy") {
		t.Errorf("failurePolicy Sometimes rendered: %v\n%s", err, stderr)
	}
}

// Each value for what differs between clusters changes what it says, and only that: the webhook's
// port (serve.yaml's listen, the container port the Service and the policy name), host network
// with its DNS policy, the control plane's CIDRs in the webhook port's policy, failurePolicy, two
// replicas with Redis (and the budget that keeps one), KEDA's listener off.
func TestHelmValuesChangeWhatTheySay(t *testing.T) {
	rendered, stderr, err := env.helm(t, "template", "scale-units", chartDir(), "-n", "scale-units",
		"--set", "webhook.port=10250", "--set", "hostNetwork=true", "--set", "networkPolicy.controlPlaneCIDRs={10.0.0.0/28}",
		"--set", "webhook.failurePolicy=Ignore", "--set", "replicaCount=2", "--set", "redis.url=redis://redis.scale-units.svc:6379/0",
		"--set", "keda.enabled=false")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	objects := byKey(t, documents(t, rendered))
	get := func(key string) map[string]any {
		object, ok := objects[key]
		if !ok {
			t.Fatalf("no %s in %v", key, sortedKeys(objects))
		}
		return object
	}
	var config map[string]any
	if err := yaml.Unmarshal([]byte(get("ConfigMap/scale-units/scale-units-serve")["data"].(map[string]any)["serve.yaml"].(string)), &config); err != nil {
		t.Fatal(err)
	}
	if config["listen"] != "0.0.0.0:10250" || config["redis"] != "redis://redis.scale-units.svc:6379/0" || config["kubernetes"] != true {
		t.Errorf("serve.yaml: %v", config)
	}
	for _, field := range []string{"keda_listen", "keda_tls_cert", "keda_tls_key", "keda_client_ca", "state_dir", "webhook_client_ca"} {
		if _, ok := config[field]; ok {
			t.Errorf("serve.yaml has %s: %v", field, config)
		}
	}
	deployment := get("Deployment/scale-units/scale-units")
	pod := deployment["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	if pod["hostNetwork"] != true || pod["dnsPolicy"] != "ClusterFirstWithHostNet" {
		t.Errorf("host network: %v %v", pod["hostNetwork"], pod["dnsPolicy"])
	}
	if replicas := deployment["spec"].(map[string]any)["replicas"]; fmt.Sprint(replicas) != "2" {
		t.Errorf("replicas %v", replicas)
	}
	container := pod["containers"].([]any)[0].(map[string]any)
	if ports := asJSON(container["ports"]); !strings.Contains(ports, `"containerPort": 10250`) || strings.Contains(ports, "grpc") {
		t.Errorf("container ports: %s", ports)
	}
	if budget := get("PodDisruptionBudget/scale-units/scale-units")["spec"].(map[string]any); fmt.Sprint(budget["minAvailable"]) != "1" {
		t.Errorf("budget: %v", budget)
	}
	ingress := asJSON(get("NetworkPolicy/scale-units/scale-units-webhook")["spec"].(map[string]any)["ingress"])
	if !strings.Contains(ingress, `"cidr": "10.0.0.0/28"`) || !strings.Contains(ingress, `"scale-units.io/client": "true"`) {
		t.Errorf("the webhook port's policy: %s", ingress)
	}
	hook := get("ValidatingWebhookConfiguration//scale-units")["webhooks"].([]any)[0].(map[string]any)
	if hook["failurePolicy"] != "Ignore" {
		t.Errorf("failurePolicy %v", hook["failurePolicy"])
	}
	for _, key := range []string{"NetworkPolicy/scale-units/scale-units-grpc", "Certificate/scale-units/scale-units-grpc",
		"Certificate/keda/scale-units-keda-client", "ClusterTriggerAuthentication//scale-units-keda"} {
		if _, ok := objects[key]; ok {
			t.Errorf("%s rendered with keda.enabled=false", key)
		}
	}
	if ports := asJSON(get("Service/scale-units/scale-units")["spec"].(map[string]any)["ports"]); strings.Contains(ports, "grpc") {
		t.Errorf("Service ports: %s", ports)
	}
}

// The chart rendered with default values (release scale-units in namespace scale-units) is the
// kustomization's objects: the same kinds, names, namespaces and specs, but for the differences
// helmOnlyKustomization and comparable list.
func TestHelmRendersTheKustomization(t *testing.T) {
	kustomized, stderr, err := env.kubectl(admin, "kustomize", filepath.Join(env.root, "deploy", "kubernetes"))
	if err != nil {
		t.Fatalf("kubectl kustomize deploy/kubernetes: %v\n%s", err, stderr)
	}
	rendered, stderr, err := env.helm(t, "template", "scale-units", chartDir(), "-n", "scale-units", "--include-crds")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	want, got := byKey(t, documents(t, kustomized)), byKey(t, documents(t, rendered))
	for key := range helmOnlyKustomization {
		if _, ok := want[key]; !ok {
			t.Errorf("%s: listed as a difference, but the kustomization has no such object", key)
		}
		if _, ok := got[key]; ok {
			t.Errorf("%s: listed as a difference, but the chart renders it", key)
		}
		delete(want, key)
	}
	if wantKeys, gotKeys := sortedKeys(want), sortedKeys(got); !reflect.DeepEqual(wantKeys, gotKeys) {
		t.Fatalf("the objects differ:\nkustomization %v\nchart         %v", wantKeys, gotKeys)
	}
	for _, key := range sortedKeys(want) {
		w, g := comparable(t, want[key]), comparable(t, got[key])
		if !reflect.DeepEqual(w, g) {
			t.Errorf("%s differs:\nkustomization %s\nchart         %s", key, asJSON(w), asJSON(g))
		}
	}
	// The chart's contracts ConfigMap is empty with default values (the listed difference).
	if data := got["ConfigMap/scale-units/scale-units-contracts"]["data"]; data != nil {
		t.Errorf("the chart's default contracts: %v", data)
	}
	// The CRD is the generated one, in crds/ (installed before the templates).
	crd, err := os.ReadFile(filepath.Join(chartDir(), "crds", "scaleunits.scale-units.dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(filepath.Join(env.root, "deploy", "kubernetes", "scaleunit-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(crd, shipped) {
		t.Errorf("the chart's CRD is not deploy/kubernetes/scaleunit-crd.yaml")
	}
}

// `helm install` with default values, as deploy/kubernetes/README.md says (the namespace made and
// labelled first, the token Secret), creates what the kustomization created: each object the
// kustomization put on this cluster has its counterpart from the release, equal once the
// release's name is read as scale-units (the kustomization's webhook clientConfig, which the test
// overlay points at the service on loopback, aside). The release's Pod is created by the
// replicaset controller and admitted under Pod Security `restricted`, as its ServiceAccount, whose
// RBAC allows exactly what the watch needs.
func TestHelmInstall(t *testing.T) {
	ctx := context.Background()
	// README.md, "With Helm": the namespace, labelled for Pod Security, and the tokens.
	for _, args := range [][]string{
		{"create", "namespace", helmNamespace},
		{"label", "namespace", helmNamespace, "pod-security.kubernetes.io/enforce=restricted",
			"pod-security.kubernetes.io/warn=restricted", "pod-security.kubernetes.io/audit=restricted"},
		{"-n", helmNamespace, "create", "secret", "generic", helmRelease + "-token",
			"--from-literal=admin=helm-admin-token", "--from-literal=push=helm-push-token", "--from-literal=read=helm-read-token"},
	} {
		if _, stderr, err := env.kubectl(admin, args...); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, stderr)
		}
	}
	installed := false
	uninstall := func() {
		if !installed {
			return
		}
		installed = false
		if stdout, stderr, err := env.helm(t, "uninstall", helmRelease, "-n", helmNamespace); err != nil {
			t.Errorf("helm uninstall: %v\n%s%s", err, stdout, stderr)
		}
	}
	t.Cleanup(func() {
		uninstall()
		_, _, _ = env.kubectl(admin, "delete", "namespace", helmNamespace, "--wait=false")
	})

	began := time.Now()
	stdout, stderr, err := env.helm(t, "install", helmRelease, chartDir(), "-n", helmNamespace)
	if err != nil {
		t.Fatalf("helm install: %v\n%s%s", err, stdout, stderr)
	}
	installed = true
	t.Logf("helm install in %s", time.Since(began).Round(time.Millisecond))

	// Every object the kustomization created has the release's counterpart.
	kustomized, stderr, err := env.kubectl(admin, "kustomize", filepath.Join(env.root, "deploy", "kubernetes"))
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, stderr)
	}
	counterpart := func(name string) string { return helmRelease + strings.TrimPrefix(name, "scale-units") }
	compared := 0
	for _, object := range documents(t, kustomized) {
		kind := fmt.Sprint(object["kind"])
		metadata := object["metadata"].(map[string]any)
		name, _ := metadata["name"].(string)
		namespace, _ := metadata["namespace"].(string)
		if kind == "Namespace" || kind == "CustomResourceDefinition" {
			continue // made before the install; installed from crds/ only where absent
		}
		resource := strings.ToLower(kind) + "." + strings.Split(fmt.Sprint(object["apiVersion"]), "/")[0]
		if !strings.Contains(fmt.Sprint(object["apiVersion"]), "/") {
			resource = strings.ToLower(kind)
		}
		get := func(name, namespace string) map[string]any {
			args := []string{"get", resource, name, "-o", "json"}
			if namespace != "" {
				args = append(args, "-n", namespace)
			}
			stdout, stderr, err := env.kubectl(admin, args...)
			if err != nil {
				t.Errorf("kubectl %v: %v\n%s", args, err, stderr)
				return nil
			}
			var live map[string]any
			if err := json.Unmarshal([]byte(stdout), &live); err != nil {
				t.Fatal(err)
			}
			return live
		}
		helmNamespaceOf := namespace
		if namespace == "scale-units" {
			helmNamespaceOf = helmNamespace
		}
		kustomization, release := get(name, namespace), get(counterpart(name), helmNamespaceOf)
		if kustomization == nil || release == nil {
			continue
		}
		// The release's objects read with its name as scale-units: names, namespaces, DNS names.
		data, err := json.Marshal(release)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(bytes.ReplaceAll(data, []byte(helmRelease), []byte("scale-units")), &release); err != nil {
			t.Fatal(err)
		}
		w, g := comparable(t, kustomization), comparable(t, release)
		if kind == "ValidatingWebhookConfiguration" {
			for _, hooks := range []map[string]any{w, g} {
				for _, hook := range hooks["webhooks"].([]any) {
					delete(hook.(map[string]any), "clientConfig")
				}
			}
			hook := release["webhooks"].([]any)[0].(map[string]any)
			service := hook["clientConfig"].(map[string]any)["service"].(map[string]any)
			if service["name"] != "scale-units" || service["namespace"] != "scale-units" || service["path"] != "/v1/admission" {
				t.Errorf("the release's webhook calls %v", service)
			}
		}
		if !reflect.DeepEqual(w, g) {
			t.Errorf("%s/%s/%s differs from the release's:\nkustomization %s\nrelease       %s", kind, namespace, name, asJSON(w), asJSON(g))
		}
		compared++
	}
	if compared < 15 {
		t.Errorf("only %d objects compared", compared)
	}

	// The Pod: created by the replicaset controller, admitted under `restricted`, as the release's
	// ServiceAccount.
	deadline := time.Now().Add(60 * time.Second)
	for {
		pods, err := env.client.CoreV1().Pods(helmNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=scale-units"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 0 {
			if account := pods.Items[0].Spec.ServiceAccountName; account != helmRelease {
				t.Errorf("the release's pod runs as %q", account)
			}
			break
		}
		if time.Now().After(deadline) {
			events, _ := env.client.CoreV1().Events(helmNamespace).List(ctx, metav1.ListOptions{})
			var notes []string
			for _, event := range events.Items {
				notes = append(notes, event.Reason+": "+event.Message)
			}
			t.Fatalf("no pod of the release's Deployment was admitted in 60 s: %v", notes)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// RBAC, as the API server decides it for the release's ServiceAccount.
	account := "system:serviceaccount:" + helmNamespace + ":" + helmRelease
	for _, check := range []struct {
		verb, resource string
		allowed        bool
	}{
		{"watch", "deployments.apps", true}, {"list", "statefulsets.apps", true}, {"get", "deployments.apps", true},
		{"list", "scaleunits.scale-units.dev", true}, {"watch", "scaleunits.scale-units.dev", true},
		{"patch", "scaleunits.scale-units.dev/status", true}, {"update", "scaleunits.scale-units.dev/status", true},
		{"create", "events.events.k8s.io", true}, {"patch", "events.events.k8s.io", true},
		{"update", "deployments.apps", false}, {"patch", "deployments.apps/scale", false},
		{"create", "scaleunits.scale-units.dev", false}, {"update", "scaleunits.scale-units.dev", false},
		{"get", "secrets", false}, {"list", "configmaps", false}, {"create", "events", false},
		{"list", "pods", false}, {"delete", "events.events.k8s.io", false},
	} {
		resource, subresource, _ := strings.Cut(check.resource, "/")
		args := []string{"auth", "can-i", check.verb, resource, "--as", account, "-A"}
		if subresource != "" {
			args = append(args, "--subresource", subresource)
		}
		stdout, _, _ := env.kubectl(admin, args...)
		if allowed := strings.TrimSpace(stdout) == "yes"; allowed != check.allowed {
			t.Errorf("%s may %s %s: %v, want %v", account, check.verb, check.resource, allowed, check.allowed)
		}
	}

	// Uninstalled, the release leaves no webhook behind (it would refuse replica changes).
	uninstall()
	if _, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, helmRelease, getOptions); err == nil {
		t.Errorf("the release's webhook is still registered after helm uninstall")
	}
}
