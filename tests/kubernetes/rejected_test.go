package kubernetes

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
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
// leaves no trace in the service: the watch never sees a change that never happened, so there is
// no cooldown of it, and the unit's count is the one the API server has.
func TestAdmittedThenRejected(t *testing.T) {
	t.Parallel()
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
	unit(t, "later", unitOptions{upCooldown: 5, downCool: 5})
	if err := env.service.push("later", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	waitCooldown(t, "later", 5)
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
	remove()
	time.Sleep(3 * time.Second)
	status := scaleUnitStatus(t, "later")
	if fmt.Sprint(status["currentReplicas"]) != "3" || status["lastScaleTime"] != nil {
		t.Fatalf("a change the API server refused left a trace: %v", status)
	}
	// The other policy gone, the decision (3 -> 5, no change ever happened) admits 3 -> 5.
	stdout, stderr, err := scale(admin, "later", 5)
	mustAllow(t, "3 -> 5 after a change that never happened", stdout, stderr, err)
	if strings.Contains(stderr, "cooldown") {
		t.Errorf("the refused change started a cooldown: %s", stderr)
	}
}
