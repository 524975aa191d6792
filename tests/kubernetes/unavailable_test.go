package kubernetes

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// With the service unable to answer, failurePolicy Fail refuses the change: a service that hangs
// (SIGSTOP: connections are accepted by the kernel, never answered) is cut off by the API server
// at the webhook's timeoutSeconds; a service that is gone refuses at once. Runs last (file order):
// it restarts the service.
func TestServiceUnavailableFailsClosed(t *testing.T) {
	workload(t, "down", optedIn)
	if err := env.service.push("down", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	if err := env.service.process.signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	stdout, stderr, err := scale(admin, "down", 5)
	hung := time.Since(began)
	if cont := env.service.process.signal(syscall.SIGCONT); cont != nil {
		t.Fatal(cont)
	}
	if err == nil {
		t.Fatalf("3 -> 5 allowed while the webhook hangs: %s%s", stdout, stderr)
	}
	if !strings.Contains(stderr, `failed calling webhook "replicas.scale-units.example.invalid"`) ||
		!(strings.Contains(stderr, "deadline exceeded") || strings.Contains(stderr, "timeout")) {
		t.Fatalf("not the webhook's timeout: %s", stderr)
	}
	t.Logf("hanging webhook: refused by the API server after %s: %s", hung.Round(time.Millisecond), strings.TrimSpace(stderr))
	if got := replicas(t, "down"); got != 3 {
		t.Fatalf("the Deployment has %d replicas", got)
	}

	address := env.service.http
	env.service.stop()
	began = time.Now()
	stdout, stderr, err = scale(admin, "down", 5)
	gone := time.Since(began)
	if err == nil {
		t.Fatalf("3 -> 5 allowed with the service stopped: %s%s", stdout, stderr)
	}
	if !strings.Contains(stderr, `failed calling webhook "replicas.scale-units.example.invalid"`) {
		t.Fatalf("not the webhook's failure: %s", stderr)
	}
	t.Logf("stopped webhook: refused by the API server after %s: %s", gone.Round(time.Millisecond), strings.TrimSpace(stderr))
	if got := replicas(t, "down"); got != 3 {
		t.Fatalf("the Deployment has %d replicas", got)
	}

	// Back on its address, the service judges again (its evidence pushed anew: memory store).
	if err := env.service.start(env, address); err != nil {
		t.Fatal(err)
	}
	if err := env.service.push("down", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	// (Its cooldowns count from its new start: 8 is refused by the webhook itself, not by the API
	// server's failure to call it.)
	stdout, stderr, err = scale(admin, "down", 8)
	mustRefuse(t, "3 -> 8 once the service is back", stdout, stderr, err)
}
