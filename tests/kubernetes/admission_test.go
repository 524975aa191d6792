package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// replicas is spec.replicas of NAMESPACE/gateway as the API server has it.
func replicas(t *testing.T, namespace string) int32 {
	t.Helper()
	deployment, err := env.client.AppsV1().Deployments(namespace).Get(context.Background(), "gateway", getOptions)
	if err != nil {
		t.Fatal(err)
	}
	return *deployment.Spec.Replicas
}

// scale is `kubectl scale deployment/gateway --replicas=N` as user, with extra flags.
func scale(user, namespace string, count int, flags ...string) (string, string, error) {
	args := append([]string{"-n", namespace, "scale", "deployment/gateway", fmt.Sprintf("--replicas=%d", count)}, flags...)
	return env.kubectl(user, args...)
}

func mustRefuse(t *testing.T, what string, stdout, stderr string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s was allowed: %s%s", what, stdout, stderr)
	}
	if !strings.Contains(stderr, denied) {
		t.Fatalf("%s: kubectl does not print the webhook's denial: %s", what, stderr)
	}
	t.Logf("%s: %s", what, strings.TrimSpace(stderr))
}

func mustAllow(t *testing.T, what string, stdout, stderr string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s was allowed: %v\n%s%s", what, err, stdout, stderr)
	}
}

// waitReplicasSeen waits until NAMESPACE/gateway's status shows count replicas (the watch saw it).
func waitReplicasSeen(t *testing.T, namespace string, count int) map[string]any {
	t.Helper()
	return waitStatus(t, namespace, 20*time.Second, fmt.Sprintf("%d replicas seen", count), func(status map[string]any) bool {
		return fmt.Sprint(status["currentReplicas"]) == fmt.Sprint(count) && status["lastScaleTime"] != nil
	})
}

// A unit deciding scale_up 3 -> 5: kubectl's 8 is refused with the webhook's message naming the
// numbers; a server dry run reaches the webhook and leaves no trace (the next real change is
// judged as if it never happened); 5 goes through, the watch sees it and the cooldown starts.
func TestScaleFollowsTheDecision(t *testing.T) {
	t.Parallel()
	workload(t, "shop", optedIn)
	unit(t, "shop", unitOptions{upCooldown: 30, downCool: 30})
	if err := env.service.push("shop", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	waitCooldown(t, "shop", 30)
	stdout, stderr, err := scale(bob, "shop", 8)
	mustRefuse(t, "3 -> 8", stdout, stderr, err)
	for _, word := range []string{"3 -> 8", "at most 5", "scale-decision:"} {
		if !strings.Contains(stderr, word) {
			t.Errorf("the denial does not say %q: %s", word, stderr)
		}
	}
	// An Event on the ScaleUnit and on the Deployment says so too.
	waitEvent(t, "shop", "ScaleUnit", "gateway", "ScaleRefused", "3 -> 8")
	waitEvent(t, "shop", "Deployment", "gateway", "ScaleRefused", "3 -> 8")
	// Server dry runs reach the webhook (8 refused, 5 allowed) and change nothing.
	stdout, stderr, err = scale(admin, "shop", 8, "--dry-run=server")
	mustRefuse(t, "3 -> 8 (server dry run)", stdout, stderr, err)
	for i := 0; i < 3; i++ {
		stdout, stderr, err = scale(admin, "shop", 5, "--dry-run=server")
		mustAllow(t, "3 -> 5 (server dry run)", stdout, stderr, err)
	}
	if !strings.Contains(stdout, "(server dry run)") {
		t.Errorf("not a server dry run: %s", stdout)
	}
	if got := replicas(t, "shop"); got != 3 {
		t.Fatalf("after dry runs the Deployment has %d replicas", got)
	}
	// No trace: no change seen, no cooldown started, the status unchanged.
	time.Sleep(3 * time.Second)
	status := scaleUnitStatus(t, "shop")
	if status["lastScaleTime"] != nil || fmt.Sprint(status["currentReplicas"]) != "3" {
		t.Fatalf("server dry runs left a trace in the status: %v", status)
	}
	if lines, _ := env.service.auditLines("shop", "watch", 0); len(lines) != 0 {
		t.Fatalf("server dry runs were seen as changes: %v", lines)
	}
	stdout, stderr, err = scale(admin, "shop", 5)
	mustAllow(t, "3 -> 5 after the dry runs", stdout, stderr, err)
	status = waitReplicasSeen(t, "shop", 5)
	// The change was seen (and judged): 5 is the unit's count and the scale-up cooldown runs.
	lines, err := env.service.auditLines("shop", "watch", 1)
	if err != nil || len(lines) != 1 {
		t.Fatalf("the watch did not audit the change once (%v): %v", err, lines)
	}
	if detail, _ := lines[0]["detail"].(map[string]any); detail["judged"] != true {
		t.Errorf("the change the webhook allowed is audited as unjudged: %v", lines[0])
	}
	stdout, stderr, err = scale(admin, "shop", 7)
	mustRefuse(t, "5 -> 7 inside the cooldown", stdout, stderr, err)
	if !strings.Contains(stderr, "cooldown") {
		t.Errorf("the denial inside the cooldown does not say cooldown: %s", stderr)
	}
	t.Logf("shop/gateway after 3 -> 5: %v", status)
}

// An edit of spec.replicas in the Deployment itself is judged like the scale subresource; an
// update that leaves the count alone never reaches the webhook (matchConditions).
func TestSpecReplicasEditIsJudged(t *testing.T) {
	t.Parallel()
	workload(t, "edit", optedIn)
	unit(t, "edit", unitOptions{upCooldown: 5, downCool: 5})
	if err := env.service.push("edit", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	waitCooldown(t, "edit", 5)
	patch := func(count int) (string, string, error) {
		return env.kubectl(bob, "-n", "edit", "patch", "deployment", "gateway", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"replicas":%d}}`, count))
	}
	stdout, stderr, err := patch(8)
	mustRefuse(t, "spec.replicas 3 -> 8", stdout, stderr, err)
	// Another field changing with the count does not get the count through.
	stdout, stderr, err = env.kubectl(bob, "-n", "edit", "patch", "deployment", "gateway", "--type=merge", "-p",
		`{"metadata":{"labels":{"tier":"edge"}},"spec":{"replicas":8,"minReadySeconds":5}}`)
	mustRefuse(t, "spec.replicas 3 -> 8 with other fields", stdout, stderr, err)
	// The two refusals' lines: the audit log is written off the request path (it never stalls a
	// decision), so a line may land after its answer; counting before both are there would count
	// a refusal as one of the reviews below.
	before, err := env.service.auditLines("edit", "admission", 2)
	if err != nil {
		t.Fatal(err)
	}
	// A label and an image change leave the count alone: the API server never asks the webhook.
	stdout, stderr, err = env.kubectl(bob, "-n", "edit", "label", "deployment", "gateway", "reviewed=yes")
	mustAllow(t, "a label", stdout, stderr, err)
	stdout, stderr, err = env.kubectl(bob, "-n", "edit", "set", "image", "deployment/gateway", "gateway=localhost/gateway:v2")
	mustAllow(t, "kubectl set image", stdout, stderr, err)
	stdout, stderr, err = patch(5)
	mustAllow(t, "spec.replicas 3 -> 5", stdout, stderr, err)
	after, err := env.service.auditLines("edit", "admission", len(before)+1)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before)+1 {
		t.Errorf("%d reviews for a label, an image and one replica change (want 1): %v", len(after)-len(before), after[len(before):])
	}
	if got := replicas(t, "edit"); got != 5 {
		t.Fatalf("the Deployment has %d replicas", got)
	}
}

// A blocked unit (no evidence) refuses every change, up and down; a member of the override group
// breaks glass with the annotations (kubectl prints the warning), counted; the break glass is
// audited, with an Event, when the watch sees the change it let through; a non-member's
// annotations grant nothing.
func TestBlockedUnitAndBreakGlass(t *testing.T) {
	t.Parallel()
	workload(t, "frozen", optedIn)
	unit(t, "frozen", unitOptions{upCooldown: 5, downCool: 5})
	for _, count := range []int{5, 2, 4} {
		stdout, stderr, err := scale(admin, "frozen", count)
		mustRefuse(t, fmt.Sprintf("blocked 3 -> %d", count), stdout, stderr, err)
		if !strings.Contains(stderr, "blocked") {
			t.Errorf("the denial does not say blocked: %s", stderr)
		}
	}
	expires := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	breakGlass := fmt.Sprintf(`{"metadata":{"annotations":{"scale-units/override-reason":"INC-1: Prometheus down","scale-units/override-expires":%q}},"spec":{"replicas":4}}`, expires)
	stdout, stderr, err := env.kubectl(bob, "-n", "frozen", "patch", "deployment", "gateway", "--type=merge", "-p", breakGlass)
	mustRefuse(t, "bob's annotated 3 -> 4", stdout, stderr, err)
	if !strings.Contains(stderr, "annotations") {
		t.Errorf("bob's denial does not say the annotations granted nothing: %s", stderr)
	}
	overridden := env.service.overrides(t)
	applied := env.service.metric(t, `scale_units_kubernetes_break_glass_total{group="`+overrides+`"} `)
	stdout, stderr, err = env.kubectl(alice, "-n", "frozen", "patch", "deployment", "gateway", "--type=merge", "-p", breakGlass)
	mustAllow(t, "alice's annotated 3 -> 4", stdout, stderr, err)
	if !strings.Contains(stderr, "Warning: scale-units: OVERRIDE by user-"+alice+" (group "+overrides) || !strings.Contains(stderr, "INC-1: Prometheus down") {
		t.Errorf("kubectl does not print the override warning: %s", stderr)
	}
	if got := replicas(t, "frozen"); got != 4 {
		t.Fatalf("the Deployment has %d replicas", got)
	}
	// Counted once (other tests' overrides run beside this one's only through alice in frozen).
	if got := env.service.overrides(t); got != overridden+1 {
		t.Errorf("the override counter went from %d to %d", overridden, got)
	}
	// Audited when the watch sees the change: who broke glass, and an Event.
	lines, err := env.service.auditLines("frozen", "watch", 1)
	if err != nil || len(lines) == 0 {
		t.Fatalf("the watch did not audit the change (%v)", err)
	}
	detail, _ := lines[0]["detail"].(map[string]any)
	glass, _ := detail["break_glass"].(map[string]any)
	if glass["user"] != "user-"+alice || glass["group"] != overrides {
		t.Errorf("the watch's audit line does not name the break glass: %v", lines[0])
	}
	waitEvent(t, "frozen", "ScaleUnit", "gateway", "BreakGlass", "user-"+alice)
	if got := env.service.metric(t, `scale_units_kubernetes_break_glass_total{group="`+overrides+`"} `); got != applied+1 {
		t.Errorf("the applied break glass counter went from %d to %d", applied, got)
	}
}
