package kubernetes

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An update the webhook admits and the API server then refuses (another validating webhook of
// the same request says no: the API server calls them all and one denial refuses the change)
// must not leave the service believing the unit runs the new count: no cooldown of a change that
// never happened, and the count the unit reports is the one the API server has, as the next
// review of the workload shows it (docs/DECISIONS.md, "Admitted, then refused").
func TestAdmittedThenRejected(t *testing.T) {
	ctx := context.Background()
	// Another webhook, as a cluster has (a policy engine): it refuses every change in `later`.
	pair, err := tls.LoadX509KeyPair(env.webhookCert, env.webhookKey)
	if err != nil {
		t.Fatal(err)
	}
	listener, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not a review", http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
			Result: &metav1.Status{Message: "the other policy refuses this change"}}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	})}
	go func() { _ = server.Serve(listener) }()
	defer server.Close()

	registered, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "scale-units", getOptions)
	if err != nil {
		t.Fatal(err)
	}
	other := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "other-policy"}}
	hook := registered.Webhooks[0].DeepCopy()
	hook.Name = "other.policy.example.invalid"
	url := "https://" + listener.Addr().(*net.TCPAddr).String() + "/"
	hook.ClientConfig.URL = &url
	hook.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "later"}}
	other.Webhooks = []admissionregistrationv1.ValidatingWebhook{*hook}
	if _, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	removed := false
	remove := func() {
		if !removed {
			removed = true
			_ = env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, other.Name, metav1.DeleteOptions{})
		}
	}
	defer remove()

	workload(t, "later", optedIn)
	if err := env.service.push("later", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	// Both webhooks are asked; ours admits 3 -> 5, the other refuses: the change does not happen.
	// A server dry run first, until the API server calls the other webhook (it records nothing).
	var stderr string
	for attempt := 0; !strings.Contains(stderr, "the other policy refuses this change"); attempt++ {
		if attempt == 150 {
			t.Fatalf("the other webhook was never called: %s", stderr)
		}
		time.Sleep(200 * time.Millisecond)
		_, stderr, _ = scale(admin, "later", 5, "--dry-run=server")
	}
	_, stderr, err = scale(admin, "later", 5)
	if err == nil || !strings.Contains(stderr, "the other policy refuses this change") || strings.Contains(stderr, denied) {
		t.Fatalf("3 -> 5 not refused by the other webhook alone: %v %s", err, stderr)
	}
	if got := replicas(t, "later"); got != 3 {
		t.Fatalf("the Deployment has %d replicas", got)
	}
	unit, err := env.service.unit("later")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unit later/gateway after the refused change: %v", unit)
	remove()
	// The next review of the Deployment (an annotation, its replicas unchanged) carries the object
	// as the API server holds it: the version 3 -> 5 was admitted against, at 3. The service
	// learns from it that 3 -> 5 never happened (whether the other policy, perhaps still cached
	// by the API server, refuses the annotation or not: every validating webhook is asked).
	_, stderr, err = env.kubectl(admin, "-n", "later", "annotate", "deployment/gateway", "example.invalid/touched=yes")
	if err != nil && !strings.Contains(stderr, "the other policy refuses this change") {
		t.Fatalf("annotate: %v %s", err, stderr)
	}
	unit, err = env.service.unit("later")
	if err != nil {
		t.Fatal(err)
	}
	decision, _ := unit["decision"].(map[string]any)
	lastAction, _ := unit["last_action"].(map[string]any)
	retracted, _ := lastAction["retracted"].(map[string]any)
	if decision["current_replicas"] != float64(3) || decision["action"] != "scale_up" || retracted["to"] != float64(5) {
		t.Fatalf("the unit does not stand on the 3 replicas the API server has, without 3 -> 5's cooldown: %v", unit)
	}
	// The other policy gone, the decision (3 -> 5, no change ever happened) must admit 3 -> 5.
	stdout, stderr, err := scale(admin, "later", 5)
	mustAllow(t, "3 -> 5 after a change that never happened", stdout, stderr, err)
}
