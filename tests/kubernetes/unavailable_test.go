package kubernetes

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With the service unable to answer, the shipped failurePolicy refuses a replica change — a
// service that hangs (SIGSTOP: connections are accepted by the kernel, never answered) within
// the webhook's timeoutSeconds, a service that is gone at once — while an update that leaves the
// count alone (kubectl set image, a rollout restart) never reaches the webhook and goes through.
// Restarted, the service takes the cooldown's start back from the ScaleUnit's status. Not
// parallel: it stops the service every test shares.
func TestServiceUnavailableRefusesOnlyScaling(t *testing.T) {
	ctx := context.Background()
	workload(t, "down", optedIn)
	unit(t, "down", unitOptions{upCooldown: 600, downCool: 600})
	registered, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "scale-units", getOptions)
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.Duration(*registered.Webhooks[0].TimeoutSeconds) * time.Second

	if err := env.service.process.signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	stdout, stderr, err := scale(admin, "down", 5)
	hung := time.Since(began)
	began = time.Now()
	_, imageErr, imageFailed := env.kubectl(admin, "-n", "down", "set", "image", "deployment/gateway", "gateway=localhost/gateway:v2")
	imaged := time.Since(began)
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
	// Refused within timeoutSeconds (and a second for kubectl and the API server's own work).
	if hung > timeout+time.Second {
		t.Errorf("refused after %s, past the webhook's timeoutSeconds (%s)", hung.Round(time.Millisecond), timeout)
	}
	t.Logf("hanging webhook: refused after %s (timeoutSeconds %s): %s", hung.Round(time.Millisecond), timeout, strings.TrimSpace(stderr))
	if imageFailed != nil {
		t.Fatalf("kubectl set image refused while the webhook hangs: %s", imageErr)
	}
	if imaged > 5*time.Second {
		t.Errorf("kubectl set image took %s while the webhook hangs: it waited for the webhook", imaged.Round(time.Millisecond))
	}
	if got := replicas(t, "down"); got != 3 {
		t.Fatalf("the Deployment has %d replicas", got)
	}

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
	if gone > timeout+time.Second {
		t.Errorf("refused after %s with the service stopped, past timeoutSeconds (%s)", gone.Round(time.Millisecond), timeout)
	}
	t.Logf("stopped webhook: refused after %s: %s", gone.Round(time.Millisecond), strings.TrimSpace(stderr))
	for _, args := range [][]string{
		{"set", "image", "deployment/gateway", "gateway=localhost/gateway:v3"},
		{"rollout", "restart", "deployment/gateway"},
	} {
		if _, stderr, err := env.kubectl(admin, append([]string{"-n", "down"}, args...)...); err != nil {
			t.Errorf("kubectl %s refused with the service stopped: %s", strings.Join(args, " "), stderr)
		}
	}
	if got := replicas(t, "down"); got != 3 {
		t.Fatalf("the Deployment has %d replicas", got)
	}

	// Back: the service knows nothing in memory, yet the status vouches for the target's history
	// (no change since knownSince, the same generation): it is ready again and judges again.
	knownSince := scaleUnitStatus(t, "down")["knownSince"]
	if err := env.service.start(env); err != nil {
		t.Fatal(err)
	}
	if err := env.service.push("down", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err = scale(admin, "down", 8)
	mustRefuse(t, "3 -> 8 once the service is back", stdout, stderr, err)
	// The image changes bumped the generation while nobody watched: a change may have happened,
	// so the cooldown counts from now (the stricter side), and 3 -> 5 waits for it.
	stdout, stderr, err = scale(admin, "down", 5)
	mustRefuse(t, "3 -> 5 right after the restart", stdout, stderr, err)
	if !strings.Contains(stderr, "cooldown") {
		t.Errorf("3 -> 5 after the restart is not refused for the cooldown: %s", stderr)
	}
	status := scaleUnitStatus(t, "down")
	if status["knownSince"] != knownSince {
		t.Errorf("knownSince moved across the restart: %v -> %v", knownSince, status["knownSince"])
	}
}
