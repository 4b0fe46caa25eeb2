package queries

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
)

// BenchmarkRefresh measures one dashboard refresh: every saved query of the
// stormctl pack against a real Prometheus holding a storm, first one after
// another, then concurrently through the runner, in the same iteration. The
// target is a concurrent refresh within 1.5× the slowest single query rather
// than the sum of them all.
func BenchmarkRefresh(b *testing.B) {
	f := startFixture(b, stormctlStorm())
	client, err := NewClient(config.Prometheus{URL: f.url}, func(string) string { return "" })
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
	for _, conc := range []int{4, len(reqs)} {
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
