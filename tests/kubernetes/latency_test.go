package kubernetes

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// sumKey holds the histogram's _sum among its buckets.
const sumKey = -1

// webhookHistogram is the API server's own apiserver_admission_webhook_admission_duration_seconds
// of our webhook: cumulative counts by upper bound (seconds), summed over its label sets.
func webhookHistogram(t *testing.T) map[float64]float64 {
	t.Helper()
	body, err := env.client.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const metric = "apiserver_admission_webhook_admission_duration_seconds_"
	buckets := map[float64]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, metric) || !strings.Contains(line, `name="replicas.scale-units.example.invalid"`) {
			continue
		}
		if strings.HasPrefix(line, metric+"sum") {
			buckets[sumKey] += sampleValue(t, line)
			continue
		}
		at := strings.Index(line, `le="`)
		if at < 0 {
			continue
		}
		buckets[bucketBound(t, line, line[at+4:])] += sampleValue(t, line)
	}
	return buckets
}

// quantile is the q-quantile of the calls between two histograms, interpolated within its bucket
// (as Prometheus' histogram_quantile does).
func quantile(before, after map[float64]float64, q float64) (float64, float64) {
	bounds := make([]float64, 0, len(after))
	for bound := range after {
		bounds = append(bounds, bound)
	}
	sort.Float64s(bounds)
	if len(bounds) > 0 && bounds[0] == sumKey {
		bounds = bounds[1:]
	}
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total == 0 {
		return 0, 0
	}
	rank, lower, below := q*total, 0.0, 0.0
	for _, bound := range bounds {
		count := after[bound] - before[bound]
		if count >= rank {
			if math.IsInf(bound, 1) {
				return lower, total
			}
			return lower + (bound-lower)*(rank-below)/math.Max(count-below, 1e-9), total
		}
		lower, below = bound, count
	}
	return lower, total
}

// The webhook's latency as the API server measures it: N server dry runs of a replica change,
// each one call of the webhook, read back from the API server's histogram. The figures go to
// BENCHMARKS.md (`make bench-webhook-kubernetes` runs this test against the release binary with
// SCALE_UNITS_LATENCY_REVIEWS=500); the test asserts that every review was a call the API server
// measured.
func TestWebhookLatencyAsTheAPIServerMeasuresIt(t *testing.T) {
	t.Parallel()
	reviews := 40
	if text := os.Getenv("SCALE_UNITS_LATENCY_REVIEWS"); text != "" {
		var err error
		if reviews, err = strconv.Atoi(text); err != nil {
			t.Fatal(err)
		}
	}
	workload(t, "latency", optedIn)
	unit(t, "latency", unitOptions{upCooldown: 5, downCool: 5})
	if err := env.service.push("latency", gatewayEvidence(false)); err != nil {
		t.Fatal(err)
	}
	before, served := webhookHistogram(t), env.service.routeHistogram(t, "admission")
	for i := 0; i < reviews; i++ {
		// 3 -> 4 and 3 -> 8 in turn: allowed and denied, both judged by the decision.
		count := 4 + 4*(i%2)
		_, _, _ = scale(admin, "latency", count, "--dry-run=server")
	}
	after, servedAfter := webhookHistogram(t), env.service.routeHistogram(t, "admission")
	p50, total := quantile(before, after, 0.5)
	p99, _ := quantile(before, after, 0.99)
	if int(total) < reviews {
		t.Fatalf("the API server measured %.0f calls of the webhook for %d reviews", total, reviews)
	}
	mean := (after[sumKey] - before[sumKey]) / total
	// The API server's finest bucket is 5 ms: a quantile inside it is interpolated, its bound is
	// what the histogram proves.
	within := 0.0
	for bound := range after {
		if bound > 0 && bound <= 0.005 {
			within += after[bound] - before[bound]
		}
	}
	// The service's own histogram of the route (finer buckets, its side of the call only): the
	// bound its p99 lies under.
	bound := upperBound(served, servedAfter, 0.99)
	line := fmt.Sprintf("webhook latency (the API server's histogram, %.0f reviews, %s): mean %.2f ms, %.1f %% within 5 ms, p50 ~%.2f ms, p99 ~%.2f ms (interpolated); the service's own p99 at most %.2f ms",
		total, env.service.bin, 1000*mean, 100*within/total, 1000*p50, 1000*p99, 1000*bound)
	t.Log(line)
	fmt.Println(line)
}

// routeHistogram is the service's scale_units_request_duration_seconds of route: cumulative
// counts by upper bound (seconds).
func (s *service) routeHistogram(t *testing.T, route string) map[float64]float64 {
	t.Helper()
	status, body, err := s.request("GET", "/metrics", nil)
	if err != nil || status != 200 {
		t.Fatalf("/metrics: %d %v", status, err)
	}
	prefix := `scale_units_request_duration_seconds_bucket{route="` + route + `",le="`
	buckets := map[float64]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		rest, found := strings.CutPrefix(line, prefix)
		if !found {
			continue
		}
		buckets[bucketBound(t, line, rest)] = sampleValue(t, line)
	}
	return buckets
}

// sampleValue is a metrics line's value (its last field).
func sampleValue(t *testing.T, line string) float64 {
	t.Helper()
	fields := strings.Fields(line)
	value, err := strconv.ParseFloat(fields[len(fields)-1], 64)
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return value
}

// bucketBound is a histogram bucket's upper bound in seconds, read from rest, the line after its
// `le="`.
func bucketBound(t *testing.T, line, rest string) float64 {
	t.Helper()
	le := rest[:strings.Index(rest, `"`)]
	if le == "+Inf" {
		return math.Inf(1)
	}
	bound, err := strconv.ParseFloat(le, 64)
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return bound
}

// upperBound is the smallest bucket bound under which a q share of the calls between two
// histograms fell.
func upperBound(before, after map[float64]float64, q float64) float64 {
	bounds := make([]float64, 0, len(after))
	for bound := range after {
		bounds = append(bounds, bound)
	}
	sort.Float64s(bounds)
	total := after[math.Inf(1)] - before[math.Inf(1)]
	for _, bound := range bounds {
		if total > 0 && after[bound]-before[bound] >= q*total {
			return bound
		}
	}
	return math.Inf(1)
}
