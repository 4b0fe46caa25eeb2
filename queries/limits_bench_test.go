package queries

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
)

// BenchmarkCappedRefresh compares, interleaved in the same iterations, a
// refresh through the capped client with the same client without its cap
// (the client before limits): the stormctl pack against a real Prometheus
// holding a storm ("prometheus"), and the fleet view's largest answer, a
// range of MaxTop series with an hour of 15s points, served from memory so
// the client's own cost shows ("fleet-range"). The target: capped/uncapped
// ≤ 1.1.
func BenchmarkCappedRefresh(b *testing.B) {
	f := startFixture(b, stormctlStorm())
	var reqs []Request
	for _, q := range f.cat.Queries() {
		r, err := f.cat.Render(q.ID, DefaultPack, Params{})
		if err != nil {
			b.Fatal(err)
		}
		reqs = append(reqs, Request{Key: q.ID, Expr: r.Expr, Time: t0.Add(during), Metrics: r.Metrics})
	}
	b.Run("prometheus", func(b *testing.B) { benchCapped(b, f.url, reqs) })

	body := fleetRangeAnswer(MaxTop, 240)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	end := time.Unix(1700003600, 0)
	rng := []Request{{Key: "fleet", Expr: "x", Range: &Range{Start: end.Add(-time.Hour), End: end, Step: 15 * time.Second}}}
	b.Run("fleet-range", func(b *testing.B) { benchCapped(b, srv.URL, rng) })
}

func benchCapped(b *testing.B, addr string, reqs []Request) {
	capped, err := NewClient(config.Prometheus{URL: addr}, noEnv)
	if err != nil {
		b.Fatal(err)
	}
	plain, err := NewClient(config.Prometheus{URL: addr}, noEnv)
	if err != nil {
		b.Fatal(err)
	}
	plain.pacer.next = plain.pacer.next.(*limitTransport).next
	ctx := context.Background()
	refresh := func(r *Runner) time.Duration {
		start := time.Now()
		for _, q := range reqs {
			if res := r.Run(ctx, q); res.Err != nil || len(res.Series) == 0 || len(res.Warnings) != 0 {
				b.Fatalf("%s: %v (series %d, warnings %q)", q.Key, res.Err, len(res.Series), res.Warnings)
			}
		}
		return time.Since(start)
	}
	rc, rp := NewRunner(capped, RunnerOptions{}), NewRunner(plain, RunnerOptions{})
	var withCap, without time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 { // alternate which goes first
			withCap += refresh(rc)
			without += refresh(rp)
		} else {
			without += refresh(rp)
			withCap += refresh(rc)
		}
	}
	n := float64(b.N)
	b.ReportMetric(withCap.Seconds()*1e3/n, "capped-ms")
	b.ReportMetric(without.Seconds()*1e3/n, "uncapped-ms")
	b.ReportMetric(withCap.Seconds()/without.Seconds(), "capped/uncapped")
}

// fleetRangeAnswer is a matrix of series × points, as Prometheus writes it.
func fleetRangeAnswer(series, points int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i := range series {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"metric":{"service":"checkout-%04d","dependency":"payments","stormctl_fleet":"worst"},"values":[`, i)
		for j := range points {
			if j > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `[%d,"%g"]`, 1700000000+15*j, 1.5+float64(i*j%97)/10)
		}
		sb.WriteString("]}")
	}
	sb.WriteString("]}}")
	return []byte(sb.String())
}
