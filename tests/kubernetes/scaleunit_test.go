package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const denied = `admission webhook "replicas.scale-units.example.invalid" denied the request: scale-units: `

var optedIn = map[string]string{"scale-units/admission": "enabled"}

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
}

// unitOptions shape a test's ScaleUnit: the api-gateway contract (examples/api-gateway) with
// these cooldowns, in this mode.
type unitOptions struct {
	mode                 string // "" for the default
	upCooldown, downCool int    // seconds
}

// contract is examples/api-gateway's contract as NAMESPACE/gateway's, with the cooldowns given.
func contract(t *testing.T, namespace string, options unitOptions) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.root, "examples", "api-gateway", "contract.json"))
	if err != nil {
		t.Fatal(err)
	}
	var contract map[string]any
	if err := json.Unmarshal(data, &contract); err != nil {
		t.Fatal(err)
	}
	contract["unit_ref"] = "unit:" + namespace + "/gateway"
	policy := contract["policy"].(map[string]any)
	policy["scale_up_cooldown_s"] = options.upCooldown
	policy["scale_down_cooldown_s"] = options.downCool
	return contract
}

// scaleUnitYAML is the ScaleUnit NAMESPACE/gateway governing the Deployment gateway.
func scaleUnitYAML(t *testing.T, namespace string, options unitOptions) string {
	t.Helper()
	spec := map[string]any{
		"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "gateway"},
		"contract":       contract(t, namespace, options),
	}
	if options.mode != "" {
		spec["mode"] = options.mode
	}
	object := map[string]any{
		"apiVersion": "scale-units.dev/v1alpha1",
		"kind":       "ScaleUnit",
		"metadata":   map[string]any{"name": "gateway", "namespace": namespace},
		"spec":       spec,
	}
	data, err := yaml.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// unit applies NAMESPACE/gateway's ScaleUnit with kubectl and waits until its status shows a
// decision and the target's count; in an opted-in namespace, until the webhook judges changes
// by it too (a server dry run to 0, below the floor, is refused or would be).
func unit(t *testing.T, namespace string, options unitOptions) {
	t.Helper()
	if stdout, stderr, err := env.kubectlIn(admin, scaleUnitYAML(t, namespace, options), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply of the ScaleUnit: %v\n%s%s", err, stdout, stderr)
	}
	waitStatus(t, namespace, 30*time.Second, "a decision at 3 replicas", func(status map[string]any) bool {
		decision, _ := status["decision"].(map[string]any)
		return decision["action"] != nil && fmt.Sprint(status["currentReplicas"]) == "3"
	})
	labels, err := env.client.CoreV1().Namespaces().Get(context.Background(), namespace, getOptions)
	if err != nil {
		t.Fatal(err)
	}
	if labels.Labels["scale-units/admission"] != "enabled" {
		return
	}
	// The API server matches the namespaceSelector against its namespace cache, and the webhook
	// finds the unit through the watch: wait until a server dry run of 3 -> 0 (below the floor)
	// is judged by the unit's decision (its audit line names the unit's mode).
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, stderr, _ := scale(admin, namespace, 0, "--dry-run=server")
		lines, err := env.service.auditLines(namespace, "admission", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range lines {
			if detail, _ := line["detail"].(map[string]any); detail["mode"] != nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no webhook judges %s by its ScaleUnit: %s", namespace, stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scaleUnitStatus is the status of NAMESPACE/gateway's ScaleUnit, as kubectl reads it.
func scaleUnitStatus(t *testing.T, namespace string) map[string]any {
	t.Helper()
	stdout, stderr, err := env.kubectl(admin, "-n", namespace, "get", "scaleunit", "gateway", "-o", "json")
	if err != nil {
		t.Fatalf("kubectl get scaleunit: %v\n%s", err, stderr)
	}
	var object map[string]any
	if err := json.Unmarshal([]byte(stdout), &object); err != nil {
		t.Fatal(err)
	}
	status, _ := object["status"].(map[string]any)
	return status
}

// waitStatus waits until ready(status) holds.
func waitStatus(t *testing.T, namespace string, limit time.Duration, what string, ready func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		status := scaleUnitStatus(t, namespace)
		if ready(status) {
			return status
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/gateway's ScaleUnit never showed %s: %v\nservice:\n%s", namespace, what, status, env.service.process.tail())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// condition is the status's condition of type kind: its status, reason and message.
func condition(status map[string]any, kind string) (string, string, string) {
	conditions, _ := status["conditions"].([]any)
	for _, item := range conditions {
		condition, _ := item.(map[string]any)
		if condition["type"] == kind {
			return fmt.Sprint(condition["status"]), fmt.Sprint(condition["reason"]), fmt.Sprint(condition["message"])
		}
	}
	return "", "", ""
}

// waitCooldown waits until the up cooldown of NAMESPACE/gateway has passed since the time its
// status says the cooldowns count from (the last change the watch saw, or the first sight).
func waitCooldown(t *testing.T, namespace string, seconds int) {
	t.Helper()
	status := scaleUnitStatus(t, namespace)
	from := fmt.Sprint(status["knownSince"])
	if last, ok := status["lastScaleTime"].(string); ok && last > from {
		from = last
	}
	at, err := time.Parse(time.RFC3339, from)
	if err != nil {
		t.Fatalf("the status says no time the cooldowns count from: %v", status)
	}
	time.Sleep(time.Until(at.Add(time.Duration(seconds+1) * time.Second)))
}

// scaleUnitEvents is `kubectl describe scaleunit gateway`'s output.
func scaleUnitEvents(t *testing.T, namespace string) string {
	t.Helper()
	stdout, _, _ := env.kubectl(admin, "-n", namespace, "describe", "scaleunit", "gateway")
	return stdout
}

// eventsOf is the Events regarding NAMESPACE's object kind/name with reason (events.k8s.io).
func eventsOf(t *testing.T, namespace, kind, name, reason string) []string {
	t.Helper()
	list, err := env.client.EventsV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, event := range list.Items {
		if event.Regarding.Kind == kind && event.Regarding.Name == name && event.Reason == reason {
			notes = append(notes, event.Note)
		}
	}
	return notes
}

// waitEvent waits for an Event regarding kind/name with reason whose note contains every word.
func waitEvent(t *testing.T, namespace, kind, name, reason string, words ...string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, note := range eventsOf(t, namespace, kind, name, reason) {
			found := true
			for _, word := range words {
				found = found && strings.Contains(note, word)
			}
			if found {
				return note
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s Event on %s %s/%s with %q: %v", reason, kind, namespace, name, words, eventsOf(t, namespace, kind, name, reason))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// A ScaleUnit applied with kubectl shows its decision in `kubectl get` within seconds: target,
// mode, decision, current, desired, the first reason.
func TestScaleUnitShowsItsDecision(t *testing.T) {
	t.Parallel()
	workload(t, "shown", nil)
	began := time.Now()
	unit(t, "shown", unitOptions{upCooldown: 5, downCool: 5})
	t.Logf("the decision was in the status %s after kubectl apply", time.Since(began).Round(time.Millisecond))
	stdout, stderr, err := env.kubectl(admin, "-n", "shown", "get", "scaleunits")
	if err != nil {
		t.Fatalf("kubectl get scaleunits: %v\n%s", err, stderr)
	}
	header := strings.Fields(strings.Split(stdout, "\n")[0])
	want := []string{"NAME", "TARGET", "MODE", "DECISION", "CURRENT", "DESIRED", "REASON", "AGE"}
	if strings.Join(header, " ") != strings.Join(want, " ") {
		t.Errorf("kubectl get scaleunits prints %v, not %v", header, want)
	}
	// No evidence yet: blocked at 3, the first reason a missing signal.
	row := strings.Fields(strings.Split(stdout, "\n")[1])
	if len(row) < 8 || row[1] != "Deployment/gateway" || row[2] != "Enforce" || row[3] != "blocked" || row[4] != "3" || row[5] != "3" || row[6] != "signal_missing" {
		t.Errorf("kubectl get scaleunits:\n%s", stdout)
	}
	if err := env.service.push("shown", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	status := waitStatus(t, "shown", 20*time.Second, "scale_up 3 -> 5", func(status map[string]any) bool {
		decision, _ := status["decision"].(map[string]any)
		return decision["action"] == "scale_up" && fmt.Sprint(status["desiredReplicas"]) == "5"
	})
	if ready, reason, message := condition(status, "Ready"); ready != "True" {
		t.Errorf("Ready %s %s %s", ready, reason, message)
	}
	if fresh, reason, _ := condition(status, "EvidenceFresh"); fresh != "True" || reason != "AllFresh" {
		t.Errorf("EvidenceFresh %s %s", fresh, reason)
	}
	if blocked, _, _ := condition(status, "ScalingBlocked"); blocked != "False" {
		t.Errorf("ScalingBlocked %s", blocked)
	}
	decision, _ := status["decision"].(map[string]any)
	if !strings.HasPrefix(fmt.Sprint(decision["componentDigest"]), "sha256:") || !strings.HasPrefix(fmt.Sprint(decision["decisionId"]), "scale-decision:") {
		t.Errorf("the decision does not name its component and id: %v", decision)
	}
	// The decision changed: an Event on the ScaleUnit says so, with the numbers.
	waitEvent(t, "shown", "ScaleUnit", "gateway", "DecisionChanged", "3 -> 5")
	if !strings.Contains(scaleUnitEvents(t, "shown"), "DecisionChanged") {
		t.Errorf("kubectl describe does not show the events:\n%s", scaleUnitEvents(t, "shown"))
	}
}

// An invalid contract: what the schema sees, the API server refuses; what only the component
// sees, the ScaleUnit's Ready condition names with its path.
func TestInvalidScaleUnitIsRefusedOrReported(t *testing.T) {
	t.Parallel()
	workload(t, "invalid", nil)
	good := scaleUnitYAML(t, "invalid", unitOptions{upCooldown: 5, downCool: 5})
	// The API server, by the schema: an unknown surface, a mode that does not exist, a replica
	// bound below zero.
	for what, broken := range map[string]string{
		"surface":      strings.Replace(good, "surface: api_gateway", "surface: teleporter", 1),
		"mode":         strings.Replace(good, "spec:\n", "spec:\n  mode: Sometimes\n", 1),
		"min_replicas": strings.Replace(good, "min_replicas: 2", "min_replicas: -1", 1),
	} {
		if broken == good {
			t.Fatalf("%s: the test's edit did not apply", what)
		}
		stdout, stderr, err := env.kubectlIn(admin, broken, "apply", "-f", "-")
		if err == nil || !strings.Contains(stderr, "Invalid value") && !strings.Contains(stderr, "Unsupported value") {
			t.Errorf("%s: the API server did not refuse it: %v %s%s", what, err, stdout, stderr)
		}
	}
	// min above max is a CEL rule of the schema.
	inverted := strings.Replace(strings.Replace(good, "min_replicas: 2", "min_replicas: 20", 1), "max_replicas: 12", "max_replicas: 4", 1)
	if _, stderr, err := env.kubectlIn(admin, inverted, "apply", "-f", "-"); err == nil {
		t.Errorf("min_replicas 20 above max_replicas 4 was accepted by the API server")
	} else {
		t.Logf("min above max: %s", strings.TrimSpace(stderr))
	}
	// Sources that name a file of the service (its ServiceAccount's token, as a bearer token for a
	// server of the ScaleUnit's choosing): the schema accepts the shape, the service refuses it.
	leaky := strings.Replace(good, "spec:\n", "spec:\n  sources:\n    prometheus:\n      main: {url: \"http://collector.invalid:9090\", bearer_token_file: /var/run/secrets/kubernetes.io/serviceaccount/token}\n", 1)
	if _, stderr, err := env.kubectlIn(admin, leaky, "apply", "-f", "-"); err != nil {
		t.Fatalf("the ScaleUnit with a token file: %v %s", err, stderr)
	}
	status := waitStatus(t, "invalid", 20*time.Second, "the sources refused", func(status map[string]any) bool {
		ready, reason, _ := condition(status, "Ready")
		return ready == "False" && reason == "SourcesRefused"
	})
	if _, _, message := condition(status, "Ready"); !strings.Contains(message, "spec.sources.prometheus.main.bearer_token_file") {
		t.Errorf("the Ready condition does not name the token file's path: %s", message)
	}
	// The stateless contract that blocks its scale-down on sessions: a CEL rule of the schema.
	stateless := strings.Replace(good, "block_scale_down_with_active: false", "block_scale_down_with_active: true", 1)
	if stateless == good {
		t.Fatal("the test's edit did not apply")
	}
	if _, stderr, err := env.kubectlIn(admin, stateless, "apply", "-f", "-"); err == nil || !strings.Contains(stderr, "spec.contract.continuity") {
		t.Errorf("the stateless contract blocking its scale-down was not refused by the API server: %v %s", err, stderr)
	}
	// What only the component sees: a contract claiming an identity that is not its own (SPEC §8).
	// Accepted by the API server, refused by the service: the Ready condition names the path.
	claimed := strings.Replace(good, "  contract:\n", "  contract:\n    contract_id: scale-unit:00000000000000000000000000000000\n", 1)
	if claimed == good {
		t.Fatal("the test's edit did not apply")
	}
	if stdout, stderr, err := env.kubectlIn(admin, claimed, "apply", "-f", "-"); err != nil {
		t.Fatalf("the API server refused a contract only the core can judge: %s%s", stdout, stderr)
	}
	status = waitStatus(t, "invalid", 20*time.Second, "the contract refused", func(status map[string]any) bool {
		ready, reason, _ := condition(status, "Ready")
		return ready == "False" && reason == "ContractRefused"
	})
	_, _, message := condition(status, "Ready")
	if !strings.Contains(message, "spec.contract.contract_id") {
		t.Errorf("the Ready condition does not name the path: %s", message)
	}
	t.Logf("Ready=False ContractRefused: %s", message)
	waitEvent(t, "invalid", "ScaleUnit", "gateway", "ContractRefused", "contract_id")
}

// A deleted ScaleUnit stops gating its target.
func TestDeletedScaleUnitStopsGating(t *testing.T) {
	t.Parallel()
	workload(t, "deleted", optedIn)
	unit(t, "deleted", unitOptions{upCooldown: 5, downCool: 5})
	// Blocked (no evidence): every change refused.
	stdout, stderr, err := scale(bob, "deleted", 4)
	mustRefuse(t, "blocked 3 -> 4", stdout, stderr, err)
	if _, stderr, err := env.kubectl(admin, "-n", "deleted", "delete", "scaleunit", "gateway"); err != nil {
		t.Fatalf("kubectl delete scaleunit: %v %s", err, stderr)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		stdout, stderr, err = scale(bob, "deleted", 4)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("3 -> 4 still refused 20 s after the ScaleUnit was deleted: %s", stderr)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !strings.Contains(stderr, "has no scale-unit contract") {
		t.Errorf("the change is allowed without the warning that nothing gates it: %s", stderr)
	}
}

// A signal flipping every 2 s for 60 s: the decision flips with it, and the status is written at
// most once per decision change (and never more than the per-minute bound).
func TestFlappingSignalWritesStatusSparingly(t *testing.T) {
	t.Parallel()
	workload(t, "flapping", nil)
	unit(t, "flapping", unitOptions{upCooldown: 0, downCool: 0})
	if err := env.service.push("flapping", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, "flapping", 20*time.Second, "scale_up", func(status map[string]any) bool {
		decision, _ := status["decision"].(map[string]any)
		return decision["action"] == "scale_up"
	})
	// Watch the ScaleUnit: every write of its status is an event of the watch.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := env.kubectlCommand(ctx, admin, "-n", "flapping", "get", "scaleunit", "gateway",
		"--watch-only", "-o", "jsonpath={.metadata.resourceVersion} {.status.decision.action}{\"\\n\"}")
	var out strings.Builder
	watch.Stdout = &out
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	changes := 0
	last := "scale_up"
	for i := 0; i < 30; i++ {
		value, next := 640, "scale_up"
		if i%2 == 0 {
			value, next = 300, "hold"
		}
		if next != last {
			changes++
			last = next
		}
		if err := env.service.push("flapping", withSignal(gatewayEvidence(false), value)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
	}
	time.Sleep(3 * time.Second)
	cancel()
	_ = watch.Wait()
	writes := 0
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.TrimSpace(line) != "" {
			writes++
		}
	}
	t.Logf("%d decision changes in 60 s, %d status writes", changes, writes)
	if writes == 0 {
		t.Fatalf("no status write in 60 s of a flapping decision: the writer is stuck")
	}
	if writes > changes {
		t.Errorf("%d status writes for %d decision changes", writes, changes)
	}
	if bound := 6 + 6; writes > bound {
		t.Errorf("%d status writes in a minute and some: over the bound (6 a minute, a burst of 6)", writes)
	}
}

// Each mode for kubectl scale, switched without a restart: Enforce refuses 3 -> 8 (the decision
// is scale_up to at most 5), Warn lets it through with the would-be denial as kubectl's warning,
// Monitor lets it through silently; both leave a would-be denial Event on the Deployment and
// count in the metric of would-be denials by mode and reason.
func TestModesForKubectlScale(t *testing.T) {
	t.Parallel()
	workload(t, "modes", optedIn)
	unit(t, "modes", unitOptions{upCooldown: 0, downCool: 0})
	if err := env.service.push("modes", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, "modes", 20*time.Second, "scale_up", func(status map[string]any) bool {
		decision, _ := status["decision"].(map[string]any)
		return decision["action"] == "scale_up"
	})
	stdout, stderr, err := scale(bob, "modes", 8)
	mustRefuse(t, "Enforce: 3 -> 8", stdout, stderr, err)
	setMode := func(mode string) {
		t.Helper()
		if _, stderr, err := env.kubectl(admin, "-n", "modes", "patch", "scaleunit", "gateway", "--type=merge", "-p", `{"spec":{"mode":"`+mode+`"}}`); err != nil {
			t.Fatalf("kubectl patch scaleunit: %v %s", err, stderr)
		}
	}
	// A mode change takes effect without a restart, once the watch has seen it.
	waitAllowed := func(count int) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, stderr, err := scale(bob, "modes", count)
			if err == nil {
				return stderr
			}
			if time.Now().After(deadline) {
				t.Fatalf("3 -> %d still refused 20 s after the mode changed: %s", count, stderr)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	warned := env.service.metric(t, `scale_units_admission_denials_total{mode="Warn",reason="past_desired"}`)
	setMode("Warn")
	stderr = waitAllowed(8)
	if !strings.Contains(stderr, "Warning: scale-units (Warn mode), would deny:") || !strings.Contains(stderr, "3 -> 8") {
		t.Errorf("Warn: kubectl does not print the would-be denial: %s", stderr)
	}
	waitEvent(t, "modes", "Deployment", "gateway", "ScaleWouldBeRefused", "Warn", "3 -> 8")
	if got := env.service.metric(t, `scale_units_admission_denials_total{mode="Warn",reason="past_desired"}`); got != warned+1 {
		t.Errorf("the Warn would-be denials went from %d to %d", warned, got)
	}
	// Back to 3 (a scale_down the decision does not allow either: Monitor lets it through).
	setMode("Monitor")
	waitStatus(t, "modes", 20*time.Second, "8 replicas", func(status map[string]any) bool {
		return fmt.Sprint(status["currentReplicas"]) == "8"
	})
	stderr = waitAllowedTo(t, bob, "modes", 12)
	if strings.Contains(stderr, "Warning") {
		t.Errorf("Monitor: kubectl printed a warning: %s", stderr)
	}
	waitEvent(t, "modes", "Deployment", "gateway", "ScaleWouldBeRefused", "Monitor", "8 -> 12")
	if got := env.service.metric(t, `scale_units_admission_denials_total{mode="Monitor"`); got == 0 {
		t.Errorf("no Monitor would-be denial counted")
	}
	if got := replicas(t, "modes"); got != 12 {
		t.Errorf("the Deployment has %d replicas", got)
	}
}

// waitAllowedTo scales NAMESPACE/gateway to count as user until it is allowed (20 s); returns
// kubectl's stderr.
func waitAllowedTo(t *testing.T, user, namespace string, count int) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, stderr, err := scale(user, namespace, count)
		if err == nil {
			return stderr
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s -> %d still refused after 20 s: %s", namespace, count, stderr)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
