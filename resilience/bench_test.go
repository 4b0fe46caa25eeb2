package resilience

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/isolated"
	"github.com/open-feature/go-sdk/openfeature/memprovider"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormctl/stormctl/flags"
)

// benchFlags is an OpenFeature client serving the retry and breaker flags
// with their no-lever values, so each request pays for real evaluations.
func benchFlags(b *testing.B) openfeature.IClient {
	static := func(key string, v any) memprovider.InMemoryFlag {
		return memprovider.InMemoryFlag{Key: key, State: memprovider.Enabled, DefaultVariant: "v", Variants: map[string]any{"v": v}}
	}
	api := isolated.NewAPI()
	p := memprovider.NewInMemoryProvider(map[string]memprovider.InMemoryFlag{
		flags.RetriesEnabled: static(flags.RetriesEnabled, true), flags.RetriesMaxAttempts: static(flags.RetriesMaxAttempts, int64(3)),
		flags.BreakerForcedOpen: static(flags.BreakerForcedOpen, false),
	})
	if err := api.SetProviderAndWait(context.Background(), p); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = api.Shutdown(context.Background()) })
	return api.NewClient()
}

func benchRetrier(b *testing.B) *Retrier {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	r, err := New(Config{Service: "checkout", Dependency: "payments", Flags: benchFlags(b), Metrics: m})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkTransportOverhead sends the same loopback requests through a
// bare http.Client and through Transport (levers, budget, breaker, metrics
// all on), alternating, and reports both and their ratio.
func BenchmarkTransportOverhead(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	bareTr, resTr := &http.Transport{}, &http.Transport{}
	defer bareTr.CloseIdleConnections()
	defer resTr.CloseIdleConnections()
	bare := &http.Client{Transport: bareTr}
	resilient := &http.Client{Transport: &Transport{Base: resTr, Retrier: benchRetrier(b)}}
	do := func(c *http.Client) time.Duration {
		start := time.Now()
		resp, err := c.Get(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return time.Since(start)
	}
	do(bare)
	do(resilient)
	var tBare, tRes time.Duration
	b.ResetTimer()
	for b.Loop() {
		tBare += do(bare)
		tRes += do(resilient)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tBare.Nanoseconds())/n, "bare-ns/req")
	b.ReportMetric(float64(tRes.Nanoseconds())/n, "resilient-ns/req")
	b.ReportMetric(float64(tRes-tBare)/n, "overhead-ns/req")
	b.ReportMetric(float64(tRes)/float64(tBare), "ratio")
}

// BenchmarkDo measures Do around an operation that does nothing, against
// calling it directly in the same run.
func BenchmarkDo(b *testing.B) {
	op := func(context.Context) (int, error) { return 1, nil }
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		r    func(*testing.B) *Retrier
	}{
		{"levers", benchRetrier},
		{"no-levers", func(b *testing.B) *Retrier {
			r, _ := New(Config{Service: "checkout", Dependency: "payments"})
			return r
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := tc.r(b)
			start := time.Now()
			for range 1000 {
				_, _ = op(ctx)
			}
			direct := float64(time.Since(start).Nanoseconds()) / 1000
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := Do(ctx, r, op); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(direct, "direct-ns/op")
		})
	}
}
