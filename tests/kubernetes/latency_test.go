package kubernetes

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// The webhook's latency as the API server measures it (its own
// apiserver_admission_webhook_admission_duration_seconds), over the reviews of the scenarios
// that ran before (file order). The figures are logged for BENCHMARKS.md; the test asserts that
// the API server did call the webhook and measured it.
func TestWebhookLatencyAsTheAPIServerMeasuresIt(t *testing.T) {
	body, err := env.client.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const metric = "apiserver_admission_webhook_admission_duration_seconds"
	var count, sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, metric) || !strings.Contains(line, `name="replicas.scale-units.example.invalid"`) {
			continue
		}
		fields := strings.Fields(line)
		value, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch {
		case strings.HasPrefix(line, metric+"_count"):
			count += value
		case strings.HasPrefix(line, metric+"_sum"):
			sum += value
		}
		t.Log(line)
	}
	if count == 0 {
		t.Fatalf("the API server measured no call of the webhook:\n%s", grep(string(body), "admission_webhook"))
	}
	t.Logf("%s: %.0f reviews, mean %.1f ms", metric, count, 1000*sum/count)
}
