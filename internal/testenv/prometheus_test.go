package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"math"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"golang.org/x/crypto/bcrypt"
)

// TestPrometheusBackfillNearNow proves that data generated relative to
// time.Now() is queryable at "now", across more than one 2h block, for
// counters (with and without _total), gauges with NaN, and histograms.
func TestPrometheusBackfillNearNow(t *testing.T) {
	const step = 15 * time.Second
	const n = 3 * 60 * 4 // 3h at 15s: spans at least one block boundary
	now := time.Now().Truncate(time.Second)
	start := now.Add(-(n - 1) * step)
	rates := make([]float64, n)
	gauge := make([]float64, n)
	for i := range rates {
		rates[i] = 2
		if i >= n-40 {
			rates[i] = 5 // the last 10 minutes
		}
		gauge[i] = float64(i)
	}
	gauge[n-1] = math.NaN()
	les := []float64{0.1, 0.5, math.Inf(1)}
	buckets, sums := make([][]float64, n), make([]float64, n)
	for i := range buckets {
		k := float64(i + 1)
		buckets[i] = []float64{6 * k, 9 * k, 10 * k} // per step: 6 ≤0.1s, 3 more ≤0.5s, 1 slower
		sums[i] = 2 * k
	}
	om := NewOpenMetrics()
	lbl := map[string]string{"service": "checkout", "dependency": "payments"}
	om.Counter("stormctl_attempts_total", lbl, start, step, Cumulate(rates, step))
	om.Counter("envoy_cluster_upstream_rq_retry", lbl, start, step, Cumulate(rates, step))
	om.Gauge("stormctl_pool_in_use", lbl, start, step, gauge)
	om.Histogram("stormctl_attempt_duration_seconds", lbl, start, step, les, buckets, sums)
	p := StartPrometheus(t, PromOptions{OpenMetrics: om.String()})

	c, err := api.NewClient(api.Config{Address: p.URL})
	if err != nil {
		t.Fatal(err)
	}
	prom := v1.NewAPI(c)
	instant := func(q string, at time.Time) float64 {
		t.Helper()
		v, _, _, err := prom.Query(context.Background(), q, at)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		vec, ok := v.(model.Vector)
		if !ok || len(vec) != 1 {
			t.Fatalf("%s at %s: want one sample, got %v", q, at, v)
		}
		return float64(vec[0].Value)
	}
	near := func(q string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", q, got, want)
		}
	}
	for _, q := range []string{"rate(stormctl_attempts_total[1m])", "rate(envoy_cluster_upstream_rq_retry[1m])"} {
		near(q, instant(q, now), 5)
		near(q+" 1h ago", instant(q, now.Add(-time.Hour)), 2)
		near(q+" 2h50m ago", instant(q, now.Add(-170*time.Minute)), 2)
	}
	if v := instant("stormctl_pool_in_use", now); !math.IsNaN(v) {
		t.Errorf("last gauge sample = %v, want NaN", v)
	}
	near("gauge 10m ago", instant("stormctl_pool_in_use", now.Add(-10*time.Minute)), n-1-40)
	q := "histogram_quantile(0.5, rate(stormctl_attempt_duration_seconds_bucket[1m]))"
	near(q, instant(q, now), 0.1*0.5/0.6)
	q = "rate(stormctl_attempt_duration_seconds_sum[1m]) / rate(stormctl_attempt_duration_seconds_count[1m])"
	near(q, instant(q, now), 0.2)
	// Ten minutes after the last sample the series is past the lookback.
	v, _, _, err := prom.Query(context.Background(), "stormctl_pool_in_use", now.Add(10*time.Minute))
	if err != nil || len(v.(model.Vector)) != 0 {
		t.Errorf("query past the lookback: %v, %v; want an empty vector", v, err)
	}

	r := v1.Range{Start: now.Add(-10 * time.Minute), End: now.Add(-time.Minute), Step: step}
	v, _, _, err = prom.QueryRange(context.Background(), "stormctl_pool_in_use", r)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(model.Matrix)
	if len(m) != 1 || len(m[0].Values) != 37 {
		t.Fatalf("range query: got %v", v)
	}
	for j, pt := range m[0].Values {
		if want := float64(n - 1 - 40 + j); float64(pt.Value) != want {
			t.Fatalf("point %d at %s = %v, want %v", j, pt.Timestamp.Time(), pt.Value, want)
		}
	}
}

// TestPrometheusTLSAndBasicAuth proves the web config reaches the server:
// https with a client certificate and a password work, and each missing
// piece is refused.
func TestPrometheusTLSAndBasicAuth(t *testing.T) {
	certs := NewCerts(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	p := StartPrometheus(t, PromOptions{WebConfig: WebConfig(certs, true, map[string]string{"ops": string(hash)})})
	if p.URL != "https://"+p.Addr {
		t.Fatalf("URL = %q", p.URL)
	}
	pem, err := os.ReadFile(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	pair, err := tls.LoadX509KeyPair(certs.ClientCert, certs.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	get := func(cfg *tls.Config, user, pass string) (int, error) {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 5 * time.Second}
		defer c.CloseIdleConnections()
		req, _ := http.NewRequest("GET", p.URL+"/api/v1/status/buildinfo", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	full := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}
	if code, err := get(full, "ops", "s3cret"); err != nil || code != 200 {
		t.Fatalf("with cert and password: %d, %v", code, err)
	}
	if code, err := get(full, "ops", "wrong"); err != nil || code != 401 {
		t.Errorf("wrong password: %d, %v; want 401", code, err)
	}
	if _, err := get(&tls.Config{RootCAs: pool}, "ops", "s3cret"); err == nil {
		t.Error("without a client certificate: no error")
	}
	if _, err := get(&tls.Config{Certificates: []tls.Certificate{pair}}, "ops", "s3cret"); err == nil {
		t.Error("without the CA: no error")
	}
}
