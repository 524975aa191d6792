package kubernetes

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// install prepares the cluster the way an operator does (deploy/kubernetes/README.md): the
// CRDs of cert-manager and KEDA (from their releases' own files, fetched from the Go module
// proxy by `make kubernetes-setup`) and their namespaces, then everything in deploy/kubernetes
// applied for real through a test overlay that only points the webhook's clientConfig at the
// service on loopback; and RBAC for the scenarios' users.
func (c *cluster) install() error {
	entries, err := os.ReadDir(c.crds)
	if err != nil || len(entries) == 0 {
		return fmt.Errorf("no CRDs in %s (run `make kubernetes-setup`): %v", c.crds, err)
	}
	if _, stderr, err := c.kubectl(admin, "apply", "--server-side", "-f", c.crds); err != nil {
		return fmt.Errorf("applying the CRDs: %v\n%s", err, stderr)
	}
	if _, stderr, err := c.kubectl(admin, "wait", "--for", "condition=Established", "--timeout", "60s", "crd", "--all"); err != nil {
		return fmt.Errorf("waiting for the CRDs: %v\n%s", err, stderr)
	}
	for _, namespace := range []string{"cert-manager", "keda"} {
		if _, stderr, err := c.kubectl(admin, "create", "namespace", namespace); err != nil {
			return fmt.Errorf("namespace %s: %v\n%s", namespace, err, stderr)
		}
	}
	overlay, err := c.writeOverlay()
	if err != nil {
		return err
	}
	if _, stderr, err := c.kubectl(admin, "apply", "--server-side", "-k", overlay); err != nil {
		return fmt.Errorf("applying deploy/kubernetes through the test overlay: %v\n%s", err, stderr)
	}
	// The CRD applied with the rest: wait until the API server serves ScaleUnits.
	if _, stderr, err := c.kubectl(admin, "wait", "--for", "condition=Established", "--timeout", "60s", "crd/scaleunits.scale-units.dev"); err != nil {
		return fmt.Errorf("waiting for the ScaleUnit CRD: %v\n%s", err, stderr)
	}
	// bob may edit Deployments (not in the override group); so may the override group.
	rbac := `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: scale-units-test-deployment-editor}
rules:
  - apiGroups: ["apps"]
    resources: ["deployments", "deployments/scale"]
    verbs: ["get", "list", "watch", "update", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: scale-units-test-deployment-editor}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: scale-units-test-deployment-editor}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "scale-units:break-glass"}
  - {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "scale-units-test:editors"}
`
	if _, stderr, err := c.kubectlIn(admin, rbac, "apply", "-f", "-"); err != nil {
		return fmt.Errorf("RBAC: %v\n%s", err, stderr)
	}
	return nil
}

// writeOverlay writes the test overlay: deploy/kubernetes as shipped, with the webhook's
// clientConfig replaced by the service's loopback URL and the webhook CA (what cert-manager's CA
// injector would set). Everything else of the webhook stays as shipped.
func (c *cluster) writeOverlay() (string, error) {
	dir := filepath.Join(c.dir, "overlay")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	// kustomize refuses an absolute base: the shipped folder, relative to the overlay.
	base, err := filepath.Rel(dir, filepath.Join(c.root, "deploy", "kubernetes"))
	if err != nil {
		return "", err
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
patches:
  - target: {group: admissionregistration.k8s.io, kind: ValidatingWebhookConfiguration, name: scale-units}
    patch: |-
      - op: replace
        path: /webhooks/0/clientConfig
        value:
          url: https://%s/v1/admission
          caBundle: %s
`, base, c.service.http, base64.StdEncoding.EncodeToString(c.webhookCA.certPEM))
	return dir, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o600)
}

// The shipped kustomization, as is, passes the API server's own validation (server-side apply,
// dry run): every object, the cert-manager and KEDA kinds against their real CRDs.
func TestManifestsPassServerSideValidation(t *testing.T) {
	stdout, stderr, err := env.kubectl(admin, "apply", "--server-side", "--dry-run=server", "-k", filepath.Join(env.root, "deploy", "kubernetes"))
	if err != nil {
		t.Fatalf("kubectl apply --server-side --dry-run=server -k deploy/kubernetes: %v\n%s%s", err, stdout, stderr)
	}
	for _, object := range []string{
		"validatingwebhookconfiguration.admissionregistration.k8s.io/scale-units",
		"deployment.apps/scale-units", "networkpolicy.networking.k8s.io/scale-units-webhook",
		"certificate.cert-manager.io/scale-units-webhook", "clustertriggerauthentication.keda.sh/scale-units-keda",
	} {
		if !strings.Contains(stdout, object+" serverside-applied (server dry run)") {
			t.Errorf("%s not applied in the dry run:\n%s", object, stdout)
		}
	}
	// The ScaledObjects too, against KEDA's CRD (their workloads' namespaces made first).
	for _, file := range []string{"scaledobject-zentinelle-gateway.yaml", "scaledobject-media-transcode.yaml"} {
		var object struct {
			Metadata struct{ Namespace string } `json:"metadata"`
		}
		data, err := os.ReadFile(filepath.Join(env.root, "deploy", "kubernetes", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, &object); err != nil {
			t.Fatal(err)
		}
		_, _, _ = env.kubectl(admin, "create", "namespace", object.Metadata.Namespace)
		if stdout, stderr, err := env.kubectl(admin, "apply", "--server-side", "--dry-run=server", "-f", filepath.Join(env.root, "deploy", "kubernetes", file)); err != nil {
			t.Errorf("%s: %v\n%s%s", file, err, stdout, stderr)
		}
	}
}

// The webhook the API server runs is the shipped one: only clientConfig differs.
func TestRegisteredWebhookIsTheShippedOne(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(env.root, "deploy", "kubernetes", "webhook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var shipped admissionv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(data, &shipped); err != nil {
		t.Fatal(err)
	}
	registered, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), "scale-units", getOptions)
	if err != nil {
		t.Fatal(err)
	}
	if len(shipped.Webhooks) != 1 || len(registered.Webhooks) != 1 {
		t.Fatalf("webhooks: shipped %d, registered %d", len(shipped.Webhooks), len(registered.Webhooks))
	}
	want, got := shipped.Webhooks[0], registered.Webhooks[0]
	if got.ClientConfig.URL == nil || *got.ClientConfig.URL != "https://"+env.service.http+"/v1/admission" {
		t.Errorf("clientConfig: %+v", got.ClientConfig)
	}
	// Everything but clientConfig is the shipped webhook's (the API server fills in defaults the
	// file may leave out: compare after defaulting the shipped one the same way).
	got.ClientConfig, want.ClientConfig = admissionv1.WebhookClientConfig{}, admissionv1.WebhookClientConfig{}
	if want.MatchPolicy == nil {
		want.MatchPolicy = got.MatchPolicy
	}
	if want.ObjectSelector == nil {
		want.ObjectSelector = got.ObjectSelector
	}
	for i := range want.Rules {
		if i < len(got.Rules) && want.Rules[i].Scope == nil {
			want.Rules[i].Scope = got.Rules[i].Scope
		}
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("the registered webhook differs from the shipped one:\nshipped    %+v\nregistered %+v", want, got)
	}
	if got.SideEffects == nil || *got.SideEffects != admissionv1.SideEffectClassNone {
		t.Errorf("sideEffects %v: a review records nothing, so None", got.SideEffects)
	}
	if len(got.MatchConditions) == 0 {
		t.Errorf("no matchConditions: every update of a Deployment reaches the webhook, not only replica changes")
	}
}

// The shipped Deployment's Pod is created by the controller-manager (the replicaset controller)
// and admitted by the API server's Pod Security admission under the namespace's `restricted`
// level: the securityContext the manifests claim is enough for it. (No kubelet: it stays Pending.)
func TestServicePodAdmittedUnderRestricted(t *testing.T) {
	ctx := context.Background()
	namespace, err := env.client.CoreV1().Namespaces().Get(ctx, "scale-units", getOptions)
	if err != nil {
		t.Fatal(err)
	}
	if level := namespace.Labels["pod-security.kubernetes.io/enforce"]; level != "restricted" {
		t.Fatalf("the shipped namespace enforces %q, not restricted: %v", level, namespace.Labels)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		pods, err := env.client.CoreV1().Pods("scale-units").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=scale-units"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 0 {
			pod := pods.Items[0]
			t.Logf("pod %s created (%s), service account %s", pod.Name, pod.Status.Phase, pod.Spec.ServiceAccountName)
			if pod.Spec.ServiceAccountName != "scale-units" {
				t.Errorf("the pod runs as ServiceAccount %q, not the shipped scale-units", pod.Spec.ServiceAccountName)
			}
			return
		}
		if time.Now().After(deadline) {
			events, _ := env.client.CoreV1().Events("scale-units").List(ctx, metav1.ListOptions{})
			var notes []string
			for _, event := range events.Items {
				notes = append(notes, event.Reason+": "+event.Message)
			}
			t.Fatalf("no pod of the shipped Deployment was admitted in 60 s: %v", notes)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitForWebhook waits until the API server calls the registered webhook: a server dry run of a
// Deployment without a contract, in an opted-in namespace, comes back with the webhook's warning.
func (c *cluster) waitForWebhook() error {
	ctx := context.Background()
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: map[string]string{"scale-units/admission": "enabled"}},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, stderr, err := c.kubectl(admin, "-n", "probe", "create", "deployment", "gateway", "--image", "localhost/gateway:test", "--replicas", "1"); err != nil {
		return fmt.Errorf("probe deployment: %v\n%s", err, stderr)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, stderr, _ := c.kubectl(admin, "-n", "probe", "scale", "deployment/gateway", "--replicas=2", "--dry-run=server")
		if strings.Contains(stderr, "has no scale-unit contract") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server never called the webhook: %s\n%s", stderr, c.service.process.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
