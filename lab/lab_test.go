package lab

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/lab/promapi"
	"github.com/stormctl/stormctl/lab/sim"
)

func newLab(t testing.TB, name string, until time.Duration) *Lab {
	t.Helper()
	sc, err := sim.Find(name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Options{Scenario: sc, Seed: 1, Until: until})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// The lab's API answers the saved amplification query with the storm the
// simulation made, and the summary's detection comes from the same query.
func TestServedStorm(t *testing.T) {
	l := newLab(t, "payments-slow", 5*time.Minute)
	if err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, err := promapi.Serve("127.0.0.1:0", l.Handler())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, _ := api.NewClient(api.Config{Address: srv.URL})
	p := v1.NewAPI(c)
	q := `sum by (service, dependency) (rate(stormctl_attempts_total[1m])) / sum by (service, dependency) (rate(stormctl_requests_total[1m]))`
	for _, tc := range []struct {
		at       time.Duration
		min, max float64
	}{{time.Minute + 30*time.Second, 0.99, 1.01}, {4 * time.Minute, 3.5, 4.2}} {
		v, _, _, err := p.Query(context.Background(), q, l.Epoch.Add(tc.at))
		if err != nil {
			t.Fatal(err)
		}
		vec := v.(model.Vector)
		if len(vec) != 1 || float64(vec[0].Value) < tc.min || float64(vec[0].Value) > tc.max {
			t.Errorf("amplification at %s = %v, want in [%v, %v]", tc.at, vec, tc.min, tc.max)
		}
	}
	sum, err := l.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.DetectAmplification == nil || *sum.DetectAmplification < 120 || *sum.DetectAmplification > 200 {
		t.Errorf("amplification detected at %v, want shortly after the fault at 120s", sum.DetectAmplification)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"# TYPE stormctl_attempts_total counter", `stormctl_requests_total{service="checkout",dependency="payments"}`,
		`stormctl_attempt_duration_seconds_bucket{service="checkout",dependency="payments",le="+Inf"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// BenchmarkInventoryFailover simulates 15 minutes of inventory-failover at
// 400 rps, sampling every second into the sample store: with no levers (the
// baseline), and with the fleet reading its levers through the flags
// provider from the embedded server, as `stormctl lab run` does. sim-s/wall-s
// is the speed as a multiple of real time; levers-cost is the lever reads'
// share of the run, against the baseline measured in the same run; the
// summary's cost is measured against the run's.
func BenchmarkInventoryFailover(b *testing.B) {
	sc, err := sim.Find("inventory-failover")
	if err != nil {
		b.Fatal(err)
	}
	var base float64
	for _, levers := range []string{"none", "embedded-redis"} {
		b.Run("levers="+levers, func(b *testing.B) {
			var simulated, wall, summary time.Duration
			var peak uint64
			for i := 0; i < b.N; i++ {
				opts := Options{Scenario: sc, Seed: 1, Until: 15 * time.Minute}
				if levers != "none" {
					e, err := StartEmbeddedRedis("127.0.0.1:0")
					if err != nil {
						b.Fatal(err)
					}
					rc := redis.NewClient(&redis.Options{Addr: e.Addr})
					b.Cleanup(func() { rc.Close(); e.Close() })
					opts.Redis = rc
				}
				l, err := New(opts)
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := l.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				wall += time.Since(start)
				simulated += l.Sim.Now()
				start = time.Now()
				if _, err := l.Summary(context.Background()); err != nil {
					b.Fatal(err)
				}
				summary += time.Since(start)
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapSys)
				l.Close()
			}
			speed := simulated.Seconds() / wall.Seconds()
			b.ReportMetric(speed, "sim-s/wall-s")
			b.ReportMetric(float64(peak)/(1<<20), "heap-MiB")
			// The summary evaluates every saved query each second of the
			// run: its cost against the run's, and the speed with it.
			b.ReportMetric(summary.Seconds()/wall.Seconds(), "summary/run")
			b.ReportMetric(simulated.Seconds()/(wall+summary).Seconds(), "sim-s/wall-s-with-summary")
			if levers == "none" {
				base = speed
			} else if base > 0 {
				b.ReportMetric(base/speed-1, "levers-cost")
			}
		})
	}
}
