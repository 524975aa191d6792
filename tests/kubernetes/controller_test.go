package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// The Go example controller (bindings-go/examples/controller: controller-runtime and the
// component's very bytes on wazero) reconciles a Deployment of this API server: the contract and
// observations it reads from the Deployment's annotations and a ConfigMap decide scale_up 3 -> 5,
// and it patches spec.replicas to 5 with its cooldown annotation.
func TestGoExampleControllerReconciles(t *testing.T) {
	ctx := context.Background()
	// Not opted in to the webhook: the controller's own gate is what this test is about.
	workload(t, "controller", nil)
	contract, err := os.ReadFile(filepath.Join(env.root, "examples", "api-gateway", "contract.json"))
	if err != nil {
		t.Fatal(err)
	}
	evidence := gatewayEvidence(false)
	delete(evidence, "current_replicas")
	observations, err := json.Marshal(evidence)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.client.CoreV1().ConfigMaps("controller").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "gateway-observations"},
		Data:       map[string]string{"observations.json": string(observations)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		deployment, err := env.client.AppsV1().Deployments("controller").Get(ctx, "gateway", getOptions)
		if err != nil {
			return err
		}
		deployment.Annotations = map[string]string{
			"scale-units.dev/contract":     string(contract),
			"scale-units.dev/observations": "gateway-observations",
		}
		_, err = env.client.AppsV1().Deployments("controller").Update(ctx, deployment, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	bin := envOr("SCALE_UNITS_CONTROLLER_BIN", filepath.Join(env.bin, "scale-units-controller"))
	controller, err := startProcess(env.dir, "controller", bin, nil, nil,
		"KUBECONFIG="+env.kubeconfigs[admin], "SCALE_UNITS_CACHE_DIR="+filepath.Join(env.dir, "controller-cache"))
	if err != nil {
		t.Fatal(err)
	}
	defer controller.stop()
	err = waitFor(controller, 120*time.Second, func() error {
		got, err := env.client.AppsV1().Deployments("controller").Get(ctx, "gateway", getOptions)
		if err != nil {
			return err
		}
		if *got.Spec.Replicas != 5 || got.Annotations["scale-units.dev/last-action-at"] == "" {
			return fmt.Errorf("the Deployment has %d replicas, annotations %v", *got.Spec.Replicas, got.Annotations)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
