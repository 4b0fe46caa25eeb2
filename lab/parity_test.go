package lab

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lab/promapi"
	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/queries"
)

// parityWindow is the rate window of the compared queries: short, so that
// a one-minute real-time run has room for several windows.
const parityWindow = 10 * time.Second

// TestParityWithPrometheus runs a short scenario in real time while a real
// Prometheus (2.42) scrapes the lab's /metrics twice a second, then asks
// both for saved queries at the same instants. /metrics carries each
// scrape interval's samples with their own timestamps, so Prometheus holds
// exactly the lab's samples and the answers must be identical. The instants
// fall between samples: Prometheus 2.x includes a sample lying exactly on
// the start of a range window and 3.x (the lab's engine) does not.
func TestParityWithPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("a one-minute real-time run")
	}
	sc, err := sim.Find("testdata/parity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Options{Scenario: sc, Seed: 1, Speed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv, err := promapi.Serve("127.0.0.1:0", l.Handler())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	prom := testenv.StartPrometheus(t, testenv.PromOptions{ExtraConfig: testenv.ScrapeConfig("lab", 500*time.Millisecond, srv.Addr)})
	prom.WaitScraped(t, "lab", 1, 15*time.Second)
	if err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	labAPI, promAPI := newClient(t, srv.URL), newClient(t, prom.URL)
	// Prometheus starts scraping while the run catches up on its own start-up.
	from, to := 20*time.Second+500*time.Millisecond, 45*time.Second+500*time.Millisecond
	held := fmt.Sprintf(`count_over_time(stormctl_requests_total[%s])`, promDuration(to-from+parityWindow))
	if want, got := value(t, labAPI, held, l.Epoch.Add(to)), value(t, promAPI, held, l.Epoch.Add(to)); got != want {
		t.Fatalf("Prometheus holds %v of the lab's %v samples: the machine did not keep real time", got, want)
	}
	cat, err := queries.Load()
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, q := range []struct {
		id string
		p  queries.Params
	}{
		{"amplification", queries.Params{}},
		{"retry_ratio", queries.Params{}},
		{"retries_per_request", queries.Params{Service: "checkout"}},
		{"edge_error_rate", queries.Params{Service: "checkout"}},
		{"dependency_p99", queries.Params{}},
	} {
		q.p.Window = parityWindow
		r, err := cat.Render(q.id, queries.DefaultPack, q.p)
		if err != nil {
			t.Fatal(err)
		}
		for at := from; at <= to; at += 5 * time.Second {
			ts := l.Epoch.Add(at)
			want, got := value(t, promAPI, r.Expr, ts), value(t, labAPI, r.Expr, ts)
			if math.IsNaN(want) != math.IsNaN(got) || math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
				t.Errorf("%s at %s: lab %v, prometheus %v", q.id, at, got, want)
			}
			compared++
		}
	}
	t.Logf("%d points compared", compared)
}

func promDuration(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

func newClient(t *testing.T, url string) *queries.Client {
	t.Helper()
	c, err := queries.NewClient(config.Prometheus{URL: url}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// value is the single series of expr at ts, NaN when there is none.
func value(t *testing.T, c *queries.Client, expr string, ts time.Time) float64 {
	t.Helper()
	v, _, _, err := c.Query(context.Background(), expr, ts)
	if err != nil {
		t.Fatalf("%s: %s: %v", c.Address, expr, err)
	}
	vec, _ := v.(model.Vector)
	switch len(vec) {
	case 0:
		return math.NaN()
	case 1:
		return float64(vec[0].Value)
	}
	t.Fatalf("%s: %s: %d series", c.Address, expr, len(vec))
	return 0
}
