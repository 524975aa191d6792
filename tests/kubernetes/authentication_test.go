package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The API server authenticates to the webhook with the client certificate of its admission
// kubeconfig: those reviews record admissions (TestScaleFollowsTheDecision: the cooldown refuses
// 5 -> 7). The same service reached as localhost:PORT has no kubeconfig entry, so the API server
// sends those reviews without a credential: they are judged, and record nothing.
func TestReviewWithoutCredentialRecordsNothing(t *testing.T) {
	ctx := context.Background()
	registered, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "scale-units", getOptions)
	if err != nil {
		t.Fatal(err)
	}
	anonymous := registered.DeepCopy()
	anonymous.ObjectMeta = metav1.ObjectMeta{Name: "scale-units-unauthenticated"}
	hook := &anonymous.Webhooks[0]
	hook.Name = "unauthenticated.scale-units.example.invalid"
	url := strings.Replace(*hook.ClientConfig.URL, "127.0.0.1:", "localhost:", 1)
	hook.ClientConfig.URL = &url
	hook.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"scale-units-test/unauthenticated": "enabled"}}
	if _, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, anonymous, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, anonymous.Name, metav1.DeleteOptions{})
	}()
	workload(t, "anon", map[string]string{"scale-units-test/unauthenticated": "enabled"})
	if err := env.service.push("anon", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	const refusal = `admission webhook "unauthenticated.scale-units.example.invalid" denied the request`
	// The API server picks the configuration up within a moment: a dry run of 8 is refused then.
	var stderr string
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr, refusal) {
		if time.Now().After(deadline) {
			t.Fatalf("the second webhook configuration never judged a change: %s", stderr)
		}
		time.Sleep(200 * time.Millisecond)
		_, stderr, _ = scale(admin, "anon", 8, "--dry-run=server")
	}
	// The change is the reviewer's own; the decision's words are not given to it.
	for _, word := range []string{"at most", "scale_up", "reasons:", "scale-decision:"} {
		if strings.Contains(stderr, word) {
			t.Errorf("an unauthenticated review got the decision (%q): %s", word, stderr)
		}
	}
	t.Logf("unauthenticated 3 -> 8: %s", strings.TrimSpace(stderr))
	stdout, stderr, err := scale(admin, "anon", 5)
	mustAllow(t, "unauthenticated 3 -> 5", stdout, stderr, err)
	// Nothing was recorded: the service still decides at the pushed count (3, not the admitted
	// 5) and knows no admission (an authenticated review would have made 5 the unit's count and
	// started the cooldown; TestScaleFollowsTheDecision shows that side).
	unit, err := env.service.unit("anon")
	if err != nil {
		t.Fatal(err)
	}
	decision, _ := unit["decision"].(map[string]any)
	if decision["current_replicas"] != float64(3) || decision["desired_replicas"] != float64(5) {
		t.Errorf("after an unauthenticated 3 -> 5 the unit decides %v", decision)
	}
	if last, _ := unit["last_action"].(map[string]any); last["admission"] != nil || last["source"] == "admission" {
		t.Errorf("an unauthenticated review recorded an admission: %v", last)
	}
	lines, err := env.service.auditLines("anon", "admission", 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range lines {
		if text := fmt.Sprint(line); !strings.Contains(text, "claimed_user") {
			t.Errorf("an unauthenticated review audited without its claimed user: %v", line)
		}
	}
}
