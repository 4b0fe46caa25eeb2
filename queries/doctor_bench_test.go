package queries

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stormctl/stormctl/internal/config"
)

// BenchmarkDoctor: what one `query doctor` costs a real Prometheus holding
// the Istio sidecar storm, against the baseline of one dashboard refresh
// of the same pack's answers (render and evaluate each query once).
// Reported: HTTP requests the server saw per operation, each way.
func BenchmarkDoctor(b *testing.B) {
	d := newData()
	istioEnvoyStorm(d)
	f := startFixture(b, d)
	var requests atomic.Int64
	target, _ := url.Parse(f.url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := NewClient(config.Prometheus{URL: srv.URL}, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	doc := &Doctor{Catalog: f.cat, Client: c, Runner: NewRunner(c, RunnerOptions{})}
	opts := DoctorOptions{Service: "checkout", Dependency: "payments", Time: t0.Add(during)}
	ctx := context.Background()
	b.Run("refresh", func(b *testing.B) {
		before := requests.Load()
		for b.Loop() {
			var reqs []Request
			for _, q := range f.cat.Queries() {
				r, err := f.cat.Render(q.ID, "envoy-istio", Params{Service: opts.Service, Dependency: opts.Dependency})
				if err != nil {
					continue
				}
				reqs = append(reqs, Request{Expr: r.Expr, Time: opts.Time, Metrics: r.Metrics})
			}
			doc.Runner.RunAll(ctx, reqs)
		}
		b.ReportMetric(float64(requests.Load()-before)/float64(b.N), "requests/op")
	})
	b.Run("doctor", func(b *testing.B) {
		before := requests.Load()
		for b.Loop() {
			if _, err := doc.Run(ctx, opts); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(requests.Load()-before)/float64(b.N), "requests/op")
	})
}

// BenchmarkRenderNaming: rendering with the naming conventions and label
// renames against the baseline of the envoy pack's exact matchers.
func BenchmarkRenderNaming(b *testing.B) {
	c := mustLoad(b)
	for _, bc := range []struct {
		name, pack string
		labels     map[string]string
	}{
		{"exact", "envoy", nil},
		{"convention", "envoy-istio", nil},
		{"convention+overrides", "envoy-istio", map[string]string{"service": "exported_job", "response_code": "code"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Render("throttle_retries", bc.pack, Params{Service: "checkout", Dependency: "payments", Labels: bc.labels}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
