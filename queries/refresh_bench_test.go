package queries

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
)

// BenchmarkRefresh measures one dashboard refresh: every saved query of the
// stormctl pack against a real Prometheus holding a storm, first one after
// another, then concurrently through the runner, in the same iteration. The
// target is a concurrent refresh within 1.5× the slowest single query rather
// than the sum of them all. "local" is the server on loopback, where both
// share this machine's CPUs; "remote" puts 20ms of network round trip in
// front of it, as for a Prometheus in another zone.
func BenchmarkRefresh(b *testing.B) {
	f := startFixture(b, stormctlStorm())
	target, err := url.Parse(f.url)
	if err != nil {
		b.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		proxy.ServeHTTP(w, r)
	}))
	b.Cleanup(remote.Close)
	for _, srv := range []struct{ name, url string }{{"local", f.url}, {"remote", remote.URL}} {
		b.Run(srv.name, func(b *testing.B) { benchRefresh(b, f, srv.url) })
	}
}

func benchRefresh(b *testing.B, f *fixture, addr string) {
	client, err := NewClient(config.Prometheus{URL: addr}, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	var reqs []Request
	for _, q := range f.cat.Queries() {
		r, err := f.cat.Render(q.ID, DefaultPack, Params{})
		if err != nil {
			b.Fatal(err)
		}
		reqs = append(reqs, Request{Key: q.ID, Expr: r.Expr, Time: t0.Add(during), Metrics: r.Metrics})
	}
	if len(reqs) < 10 {
		b.Fatalf("catalogue has %d queries, want at least 10", len(reqs))
	}
	ctx := context.Background()
	for _, conc := range []int{4, DefaultConcurrency} {
		b.Run("concurrency="+strconv.Itoa(conc), func(b *testing.B) {
			runner := NewRunner(client, RunnerOptions{Concurrency: conc})
			// slowest sums, per iteration, the slowest single query of that round.
			var seq, slowest, par time.Duration
			for b.Loop() {
				var round time.Duration
				for _, q := range reqs {
					start := time.Now()
					if res := runner.Run(ctx, q); res.Err != nil || len(res.Series) == 0 {
						b.Fatalf("%s: %v (series %d)", q.Key, res.Err, len(res.Series))
					}
					d := time.Since(start)
					seq += d
					round = max(round, d)
				}
				slowest += round
				start := time.Now()
				for _, res := range runner.RunAll(ctx, reqs) {
					if res.Err != nil {
						b.Fatal(res.Err)
					}
				}
				par += time.Since(start)
			}
			n := float64(b.N)
			b.ReportMetric(seq.Seconds()*1e3/n, "seq-ms")
			b.ReportMetric(par.Seconds()*1e3/n, "concurrent-ms")
			b.ReportMetric(par.Seconds()/seq.Seconds(), "concurrent/seq")
			b.ReportMetric(slowest.Seconds()*1e3/n, "slowest-ms")
			b.ReportMetric(par.Seconds()/slowest.Seconds(), "concurrent/slowest")
		})
	}
}
