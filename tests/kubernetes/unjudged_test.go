package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A change the webhook never judged (made while its configuration was removed) starts the
// contract's cooldown once the watch sees it, counted from then; an Event and the audit line say
// it went unjudged. Not parallel: it removes the webhook configuration every namespace shares.
func TestUnjudgedChangeStartsTheCooldown(t *testing.T) {
	ctx := context.Background()
	workload(t, "unjudged", optedIn)
	unit(t, "unjudged", unitOptions{upCooldown: 20, downCool: 20})
	if err := env.service.push("unjudged", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	waitCooldown(t, "unjudged", 20)
	unjudged := env.service.metric(t, "scale_units_kubernetes_unjudged_changes_total ")
	webhooks := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	registered, err := webhooks.Get(ctx, "scale-units", getOptions)
	if err != nil {
		t.Fatal(err)
	}
	if err := webhooks.Delete(ctx, "scale-units", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		again := registered.DeepCopy()
		again.ResourceVersion, again.UID = "", ""
		if _, err := webhooks.Create(ctx, again, metav1.CreateOptions{}); err != nil {
			t.Errorf("the webhook configuration could not be restored: %v", err)
		}
	}
	defer restore()
	// Unjudged: 3 -> 9, past the decision's 5. The API server may keep calling the removed
	// webhook for a moment (its configuration cache): retry until the change goes through.
	var stderr string
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, stderr, err = scale(bob, "unjudged", 9)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("3 -> 9 refused 30 s after the webhook configuration was removed: %s", stderr)
		}
		time.Sleep(250 * time.Millisecond)
	}
	seen := time.Now()
	status := waitReplicasSeen(t, "unjudged", 9)
	last, err := time.Parse(time.RFC3339, fmt.Sprint(status["lastScaleTime"]))
	if err != nil || last.Before(seen.Add(-5*time.Second)) {
		t.Errorf("lastScaleTime %v is not when the change was seen (%s)", status["lastScaleTime"], seen.Format(time.RFC3339))
	}
	lines, err := env.service.auditLines("unjudged", "watch", 1)
	if err != nil || len(lines) != 1 {
		t.Fatalf("the watch did not audit the change once (%v): %v", err, lines)
	}
	if detail, _ := lines[0]["detail"].(map[string]any); detail["judged"] != false || fmt.Sprint(detail["to"]) != "9" {
		t.Errorf("the unjudged change is not audited as such: %v", lines[0])
	}
	waitEvent(t, "unjudged", "ScaleUnit", "gateway", "ScaleNotJudged", "3 -> 9")
	if got := env.service.metric(t, "scale_units_kubernetes_unjudged_changes_total "); got <= unjudged {
		t.Errorf("the unjudged changes counter stayed at %d", got)
	}
	restore()
	// Back under the webhook: the decision now stands at 9 and its cooldown runs from the
	// change the watch saw, so a move is refused for the cooldown's reason.
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, stderr, err = scale(bob, "unjudged", 10)
		if err != nil && strings.Contains(stderr, denied) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restored webhook never judged 9 -> 10: %v %s", err, stderr)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !strings.Contains(stderr, "cooldown") {
		t.Errorf("9 -> 10 right after the unjudged change is refused, but not for the cooldown: %s", stderr)
	}
	t.Logf("after the unjudged 3 -> 9: %s", strings.TrimSpace(stderr))
}
