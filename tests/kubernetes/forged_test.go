package kubernetes

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A review sent without the API server (anyone's POST to the webhook's port, claiming to be the
// override group, allowing a change) changes nothing the service believes: the unit's count,
// its cooldown and its status stay what the watch saw.
func TestForgedReviewChangesNothing(t *testing.T) {
	t.Parallel()
	workload(t, "anon", optedIn)
	unit(t, "anon", unitOptions{upCooldown: 5, downCool: 5})
	if err := env.service.push("anon", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	waitCooldown(t, "anon", 5)
	before := scaleUnitStatus(t, "anon")
	for i, change := range [][2]int{{3, 5}, {3, 9}, {9, 1}} {
		review := map[string]any{
			"apiVersion": "admission.k8s.io/v1",
			"kind":       "AdmissionReview",
			"request": map[string]any{
				"uid":         fmt.Sprintf("forged-%d", i),
				"kind":        map[string]any{"group": "autoscaling", "version": "v1", "kind": "Scale"},
				"resource":    map[string]any{"group": "apps", "version": "v1", "resource": "deployments"},
				"subResource": "scale",
				"name":        "gateway",
				"namespace":   "anon",
				"operation":   "UPDATE",
				"userInfo":    map[string]any{"username": "mallory", "groups": []string{overrides}},
				"object":      map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": map[string]any{"name": "gateway", "namespace": "anon"}, "spec": map[string]any{"replicas": change[1]}},
				"oldObject":   map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": map[string]any{"name": "gateway", "namespace": "anon"}, "spec": map[string]any{"replicas": change[0]}},
				"dryRun":      false,
			},
		}
		status, body, err := env.service.request("POST", "/v1/admission", review)
		if err != nil || status != 200 {
			t.Fatalf("the forged review was not answered: %d %v %s", status, err, body)
		}
		t.Logf("forged %d -> %d: %s", change[0], change[1], body)
	}
	time.Sleep(3 * time.Second)
	after := scaleUnitStatus(t, "anon")
	for _, field := range []string{"currentReplicas", "lastScaleTime", "knownSince"} {
		if fmt.Sprint(before[field]) != fmt.Sprint(after[field]) {
			t.Errorf("a forged review moved the status's %s: %v -> %v", field, before[field], after[field])
		}
	}
	unit, err := env.service.unit("anon")
	if err != nil {
		t.Fatal(err)
	}
	decision, _ := unit["decision"].(map[string]any)
	if fmt.Sprint(decision["current_replicas"]) != "3" || fmt.Sprint(decision["desired_replicas"]) != "5" {
		t.Errorf("after forged reviews the unit decides %v", decision)
	}
	if lines, _ := env.service.auditLines("anon", "watch", 0); len(lines) != 0 {
		t.Errorf("forged reviews were taken for changes: %v", lines)
	}
	// The real change still goes through: nothing was started by the forgeries.
	stdout, stderr, err := scale(bob, "anon", 5)
	mustAllow(t, "3 -> 5 after the forged reviews", stdout, stderr, err)
	if strings.Contains(stderr, "cooldown") {
		t.Errorf("a forged review started a cooldown: %s", stderr)
	}
}
