package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const denied = `admission webhook "replicas.scale-units.example.invalid" denied the request: scale-units: `

// workload creates namespace NAMESPACE (labelled with label, the webhook's opt-in) and the
// Deployment gateway in it at 3 replicas.
func workload(t *testing.T, namespace string, label map[string]string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: label},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replicas := int32(3)
	labels := map[string]string{"app": "gateway"}
	_, err = env.client.AppsV1().Deployments(namespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "gateway"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "gateway", Image: "localhost/gateway:test"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if label == nil {
		return
	}
	// The API server matches the namespaceSelector against its namespace cache: wait until a
	// server dry run of 3 -> 0 (below every contract's floor, so always refused) reaches a webhook.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, stderr, _ := scale(admin, namespace, 0, "--dry-run=server")
		if strings.Contains(stderr, "denied the request") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no webhook judges %s: %s", namespace, stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var optedIn = map[string]string{"scale-units/admission": "enabled"}

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
		t.Fatalf("%s was refused: %v\n%s%s", what, err, stdout, stderr)
	}
}

// A unit deciding scale_up 3 -> 5: kubectl's 8 is refused with the webhook's message, a server
// dry run reaches the webhook and records nothing, 5 is admitted and starts the cooldown.
func TestScaleFollowsTheDecision(t *testing.T) {
	workload(t, "shop", optedIn)
	if err := env.service.push("shop", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	// bob, not alice: a member of the override group breaks glass through the scale subresource
	// with "no reason given" (TestBlockedUnitAndBreakGlass), so her 3 -> 8 would be allowed.
	stdout, stderr, err := scale(bob, "shop", 8)
	mustRefuse(t, "3 -> 8", stdout, stderr, err)
	if !strings.Contains(stderr, "3 -> 8") {
		t.Errorf("the denial does not name the change: %s", stderr)
	}
	// A server dry run reaches the webhook (8 is refused there too) and records nothing.
	stdout, stderr, err = scale(admin, "shop", 8, "--dry-run=server")
	mustRefuse(t, "3 -> 8 (server dry run)", stdout, stderr, err)
	stdout, stderr, err = scale(admin, "shop", 5, "--dry-run=server")
	mustAllow(t, "3 -> 5 (server dry run)", stdout, stderr, err)
	if !strings.Contains(stdout, "(server dry run)") {
		t.Errorf("not a server dry run: %s", stdout)
	}
	if got := replicas(t, "shop"); got != 3 {
		t.Fatalf("after dry runs the Deployment has %d replicas", got)
	}
	lines, err := env.service.auditLines("shop", "admission", 3)
	if err != nil || len(lines) < 3 {
		t.Fatalf("the webhook did not audit the three reviews (%v): %v", err, lines)
	}
	// Had the dry run recorded its admission, the cooldown would now refuse 3 -> 5.
	stdout, stderr, err = scale(admin, "shop", 5)
	mustAllow(t, "3 -> 5 after the dry run", stdout, stderr, err)
	if got := replicas(t, "shop"); got != 5 {
		t.Fatalf("after scale 5 the Deployment has %d replicas", got)
	}
	// The admission was recorded: 5 is the unit's count and the scale-up cooldown runs.
	stdout, stderr, err = scale(admin, "shop", 7)
	mustRefuse(t, "5 -> 7 inside the cooldown", stdout, stderr, err)
	unit, err := env.service.unit("shop")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unit shop/gateway after 3 -> 5: %v", unit)
}

// An edit of spec.replicas in the Deployment itself is judged like the scale subresource.
func TestSpecReplicasEditIsJudged(t *testing.T) {
	workload(t, "edit", optedIn)
	if err := env.service.push("edit", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	patch := func(count int) (string, string, error) {
		return env.kubectl(bob, "-n", "edit", "patch", "deployment", "gateway", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"replicas":%d}}`, count))
	}
	stdout, stderr, err := patch(8)
	mustRefuse(t, "spec.replicas 3 -> 8", stdout, stderr, err)
	// Another field changing with the count does not get the count through.
	stdout, stderr, err = env.kubectl(bob, "-n", "edit", "patch", "deployment", "gateway", "--type=merge", "-p",
		`{"metadata":{"labels":{"tier":"edge"}},"spec":{"replicas":8,"minReadySeconds":5}}`)
	mustRefuse(t, "spec.replicas 3 -> 8 with other fields", stdout, stderr, err)
	stdout, stderr, err = patch(5)
	mustAllow(t, "spec.replicas 3 -> 5", stdout, stderr, err)
	if got := replicas(t, "edit"); got != 5 {
		t.Fatalf("the Deployment has %d replicas", got)
	}
	// A change that leaves the count alone is not the webhook's business.
	stdout, stderr, err = env.kubectl(bob, "-n", "edit", "label", "deployment", "gateway", "reviewed=yes")
	mustAllow(t, "a label", stdout, stderr, err)
}

// A blocked unit (no evidence) refuses every change, up and down; a member of the override group
// breaks glass with the annotations, allowed with kubectl's warning, counted and audited; a
// non-member's annotations grant nothing.
func TestBlockedUnitAndBreakGlass(t *testing.T) {
	workload(t, "frozen", optedIn)
	for _, count := range []int{5, 2, 4} {
		stdout, stderr, err := scale(admin, "frozen", count)
		mustRefuse(t, fmt.Sprintf("blocked 3 -> %d", count), stdout, stderr, err)
	}
	expires := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	breakGlass := fmt.Sprintf(`{"metadata":{"annotations":{"scale-units/override-reason":"INC-1: Prometheus down","scale-units/override-expires":%q}},"spec":{"replicas":4}}`, expires)
	stdout, stderr, err := env.kubectl(bob, "-n", "frozen", "patch", "deployment", "gateway", "--type=merge", "-p", breakGlass)
	mustRefuse(t, "bob's annotated 3 -> 4", stdout, stderr, err)
	if !strings.Contains(stderr, "annotations") {
		t.Errorf("bob's denial does not say the annotations granted nothing: %s", stderr)
	}
	overridden := env.service.overrides(t)
	stdout, stderr, err = env.kubectl(alice, "-n", "frozen", "patch", "deployment", "gateway", "--type=merge", "-p", breakGlass)
	mustAllow(t, "alice's annotated 3 -> 4", stdout, stderr, err)
	if !strings.Contains(stderr, "Warning: scale-units: OVERRIDE by user-"+alice+" (group "+overrides) || !strings.Contains(stderr, "INC-1: Prometheus down") {
		t.Errorf("kubectl does not print the override warning: %s", stderr)
	}
	if got := replicas(t, "frozen"); got != 4 {
		t.Fatalf("the Deployment has %d replicas", got)
	}
	lines, err := env.service.auditLines("frozen", "admission", 6)
	if err != nil {
		t.Fatal(err)
	}
	var audited bool
	for _, line := range lines {
		if line["allowed"] == true && strings.Contains(fmt.Sprint(line), "alice") && strings.Contains(fmt.Sprint(line), "INC-1") {
			audited = true
		}
	}
	if !audited {
		t.Errorf("no audit line of alice's override among %v", lines)
	}
	// Counted once (other tests' overrides, made earlier in the same service, are not this one's).
	if got := env.service.overrides(t); got != overridden+1 {
		t.Errorf("the override counter went from %d to %d", overridden, got)
	}
}

// grep is the lines of text containing word.
func grep(text, word string) string {
	var kept []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, word) {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}
