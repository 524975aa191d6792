package kubernetes

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A scale target of any kind with a `scale` subresource (a custom resource here, as Argo
// Rollouts or a GPU pool operator would define it), named by a ScaleUnit's scaleTargetRef as the
// HPA names it: the watch finds its kind on the API server, watches it and reads its count from
// its scale subresource; a change of it starts the cooldown. The shipped RBAC covers Deployments
// and StatefulSets only: an operator grants the kind (deploy/kubernetes/README.md), as here.
func TestAnyKindWithAScaleSubresourceIsATarget(t *testing.T) {
	t.Parallel()
	setup := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.test.scale-units.dev}
spec:
  group: test.scale-units.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {size: {type: integer}}}
            status: {type: object, properties: {size: {type: integer}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: scale-units-widgets}
rules:
  - apiGroups: ["test.scale-units.dev"]
    resources: ["widgets"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["test.scale-units.dev"]
    resources: ["widgets/scale"]
    verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: scale-units-widgets}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: scale-units-widgets}
subjects:
  - {kind: ServiceAccount, name: scale-units, namespace: scale-units}
`
	if _, stderr, err := env.kubectlIn(admin, setup, "apply", "-f", "-"); err != nil {
		t.Fatalf("the Widget CRD and its RBAC: %v\n%s", err, stderr)
	}
	if _, stderr, err := env.kubectl(admin, "wait", "--for", "condition=Established", "--timeout", "60s", "crd/widgets.test.scale-units.dev"); err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	widget := `apiVersion: test.scale-units.dev/v1
kind: Widget
metadata: {name: gateway, namespace: widgets}
spec: {size: 3}
`
	if _, stderr, err := env.kubectl(admin, "create", "namespace", "widgets"); err != nil {
		t.Fatal(stderr)
	}
	if _, stderr, err := env.kubectlIn(admin, widget, "apply", "-f", "-"); err != nil {
		t.Fatalf("the Widget: %v\n%s", err, stderr)
	}
	unit := strings.Replace(scaleUnitYAML(t, "widgets", unitOptions{upCooldown: 30, downCool: 30}),
		"apiVersion: apps/v1\n    kind: Deployment", "apiVersion: test.scale-units.dev/v1\n    kind: Widget", 1)
	if !strings.Contains(unit, "kind: Widget") {
		t.Fatalf("the test's edit did not apply:\n%s", unit)
	}
	if _, stderr, err := env.kubectlIn(admin, unit, "apply", "-f", "-"); err != nil {
		t.Fatalf("the ScaleUnit: %v\n%s", err, stderr)
	}
	status := waitStatus(t, "widgets", 30*time.Second, "the Widget's 3 replicas", func(status map[string]any) bool {
		return fmt.Sprint(status["currentReplicas"]) == "3"
	})
	if target, _ := status["target"].(map[string]any); target["ref"] != "Widget/gateway" {
		t.Errorf("the status names the target %v", status["target"])
	}
	if _, stderr, err := env.kubectl(admin, "-n", "widgets", "scale", "widget/gateway", "--replicas=4"); err != nil {
		t.Fatalf("kubectl scale widget: %v %s", err, stderr)
	}
	status = waitReplicasSeen(t, "widgets", 4)
	lines, err := env.service.auditLines("widgets", "watch", 1)
	if err != nil || len(lines) != 1 {
		t.Fatalf("the watch did not audit the Widget's change once (%v): %v", err, lines)
	}
	if detail, _ := lines[0]["detail"].(map[string]any); fmt.Sprint(detail["from"]) != "3" || fmt.Sprint(detail["to"]) != "4" {
		t.Errorf("the watch's audit line: %v", lines[0])
	}
	t.Logf("the Widget's change seen: %v", status["lastScaleTime"])
}
