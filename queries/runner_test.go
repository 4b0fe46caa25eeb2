package queries

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
)

// stormData is the last 30 minutes of one caller: 10 logical requests/s,
// 25 attempts/s, a pool at 40 of 50.
func stormData(now time.Time) string {
	const step, n = 15 * time.Second, 120
	start := now.Add(-(n - 1) * step)
	flat := func(v float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	lbl := map[string]string{"service": "checkout", "dependency": "payments"}
	om := testenv.NewOpenMetrics()
	om.Counter("stormctl_requests_total", lbl, start, step, testenv.Cumulate(flat(10), step))
	om.Counter("stormctl_attempts_total", map[string]string{"service": "checkout", "dependency": "payments", "outcome": "error"},
		start, step, testenv.Cumulate(flat(25), step))
	om.Gauge("stormctl_pool_in_use", map[string]string{"service": "checkout", "pool": "db"}, start, step, flat(40))
	return om.String()
}

// proxy sits in front of a server and measures what the runner sends.
type proxy struct {
	*httptest.Server
	requests, inFlight, maxInFlight atomic.Int64
	delay                           time.Duration
	gate                            chan struct{} // when set, requests wait for it to close
	seen                            chan struct{} // receives once per request, if set
}

func newProxy(t *testing.T, target string) *proxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &proxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		n := p.inFlight.Add(1)
		defer p.inFlight.Add(-1)
		for m := p.maxInFlight.Load(); n > m && !p.maxInFlight.CompareAndSwap(m, n); m = p.maxInFlight.Load() {
		}
		if p.seen != nil {
			p.seen <- struct{}{}
		}
		if p.gate != nil {
			<-p.gate
		}
		time.Sleep(p.delay)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// noLeaks checks, after every other cleanup of the test, that the
// goroutines the test started have ended.
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func newRunner(t testing.TB, url string, opts RunnerOptions) *Runner {
	t.Helper()
	c, err := NewClient(config.Prometheus{URL: url}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	return NewRunner(c, opts)
}

func TestRunnerValues(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	p := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormData(now)})
	r := newRunner(t, p.URL, RunnerOptions{})
	ctx := context.Background()
	amp := "sum by (service) (rate(stormctl_attempts_total[1m])) / sum by (service) (rate(stormctl_requests_total[1m]))"
	res := r.Run(ctx, Request{Key: "amp", Expr: amp, Time: now})
	if res.Err != nil || res.NoData != nil || res.Stale || len(res.Series) != 1 {
		t.Fatalf("amplification: %+v", res)
	}
	if s := res.Series[0]; math.Abs(s.Value-2.5) > 1e-9 || s.Labels["service"] != "checkout" {
		t.Errorf("amplification = %v %v, want 2.5 for checkout", s.Value, s.Labels)
	}
	if !res.At.Equal(now) {
		t.Errorf("At = %v, want %v", res.At, now)
	}

	rng := &Range{Start: now.Add(-5 * time.Minute), End: now, Step: time.Minute}
	res = r.Run(ctx, Request{Key: "pool", Expr: "stormctl_pool_in_use", Range: rng})
	if res.Err != nil || len(res.Series) != 1 || len(res.Series[0].Points) != 6 {
		t.Fatalf("range: %+v", res)
	}
	for _, pt := range res.Series[0].Points {
		if pt.V != 40 {
			t.Fatalf("range points %v, want 40 each", res.Series[0].Points)
		}
	}
	if got := res.Series[0].Points[0].T; !got.Equal(rng.Start) {
		t.Errorf("first point at %v, want %v", got, rng.Start)
	}

	for expr, check := range map[string]func(float64) bool{
		"vector(0) / 0":            math.IsNaN,
		"vector(1) / 0":            func(v float64) bool { return math.IsInf(v, 1) },
		"stormctl_pool_in_use * 0": func(v float64) bool { return v == 0 },
		"scalar(vector(0) / 0)":    math.IsNaN,
	} {
		res := r.Run(ctx, Request{Key: expr, Expr: expr, Time: now})
		if res.Err != nil || res.NoData != nil || len(res.Series) != 1 || !check(res.Series[0].Value) {
			t.Errorf("%s: %+v", expr, res)
		}
	}
}

func TestRunnerNoData(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	p := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormData(now)})
	r := newRunner(t, p.URL, RunnerOptions{})
	rng := &Range{Start: now.Add(-10 * time.Minute), End: now, Step: time.Minute}
	for _, tc := range []struct {
		name    string
		req     Request
		missing []string
		msg     string
	}{
		{"metric absent", Request{Expr: "rate(envoy_cluster_upstream_rq_retry[1m])", Metrics: []string{"envoy_cluster_upstream_rq_retry"}},
			[]string{"envoy_cluster_upstream_rq_retry"}, `metric "envoy_cluster_upstream_rq_retry" not found`},
		{"selector mismatch", Request{Expr: `stormctl_requests_total{service="cart"}`, Metrics: []string{"stormctl_requests_total"}},
			nil, `metric "stormctl_requests_total" present, but no series match the selector`},
		{"one of two", Request{Expr: "stormctl_requests_total / on() go_sql_max_open_connections", Metrics: []string{"stormctl_requests_total", "go_sql_max_open_connections"}},
			[]string{"go_sql_max_open_connections"}, `metric "go_sql_max_open_connections" not found ("stormctl_requests_total" present)`},
		{"both absent in range", Request{Expr: "a_total + b_total", Metrics: []string{"a_total", "b_total"}, Range: rng},
			[]string{"a_total", "b_total"}, `metrics "a_total", "b_total" not found`},
		{"present in range", Request{Expr: `stormctl_pool_in_use{pool="x"}`, Metrics: []string{"stormctl_pool_in_use"}, Range: rng},
			nil, "present, but no series match the selector"},
		{"stopped reporting", Request{Expr: "stormctl_pool_in_use", Metrics: []string{"stormctl_pool_in_use"}, Time: now.Add(20 * time.Minute)},
			[]string{"stormctl_pool_in_use"}, "not found"},
		{"no metrics listed", Request{Expr: "up"}, nil, "no series match the query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.req.Time.IsZero() {
				tc.req.Time = now
			}
			res := r.Run(context.Background(), tc.req)
			if res.Err != nil || res.NoData == nil || len(res.Series) != 0 {
				t.Fatalf("want no data: %+v", res)
			}
			if fmt.Sprint(res.NoData.Missing) != fmt.Sprint(tc.missing) || !strings.Contains(res.NoData.Message, tc.msg) {
				t.Fatalf("NoData = %+v, want missing %v and %q", res.NoData, tc.missing, tc.msg)
			}
		})
	}
}

// TestRunnerWarnings gets a warning from a real server: a remote_read
// endpoint that refuses connections makes every query warn.
func TestRunnerWarnings(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	remote := "remote_read:\n  - url: http://127.0.0.1:" + fmt.Sprint(testenv.FreePort(t)) + "/read\n    read_recent: true\n"
	p := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormData(now), ExtraConfig: remote})
	res := newRunner(t, p.URL, RunnerOptions{}).Run(context.Background(), Request{Expr: "stormctl_pool_in_use", Time: now})
	if res.Err != nil || len(res.Series) != 1 || res.Series[0].Value != 40 {
		t.Fatalf("want the local data despite the warning: %+v", res)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "remote_read") {
		t.Fatalf("Warnings = %q, want the remote_read failure", res.Warnings)
	}
}

// TestRunnerSingleflight: concurrent Runs of one Key send one request and
// all get its result.
func TestRunnerSingleflight(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	p := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormData(now)})
	px := newProxy(t, p.URL)
	px.gate, px.seen = make(chan struct{}), make(chan struct{}, 100)
	r := newRunner(t, px.URL, RunnerOptions{})
	const callers = 20
	results := make([]Result, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			results[i] = r.Run(context.Background(), Request{Key: "pool|checkout", Expr: "stormctl_pool_in_use", Time: now})
		})
	}
	<-px.seen
	time.Sleep(100 * time.Millisecond) // let every caller join the flight
	close(px.gate)
	wg.Wait()
	if n := px.requests.Load(); n != 1 {
		t.Fatalf("%d callers sent %d requests, want 1", callers, n)
	}
	for i, res := range results {
		if res.Err != nil || len(res.Series) != 1 || res.Series[0].Value != 40 {
			t.Fatalf("caller %d: %+v", i, res)
		}
	}
	// Once the flight has landed, the next Run asks again.
	r.Run(context.Background(), Request{Key: "pool|checkout", Expr: "stormctl_pool_in_use", Time: now})
	if n := px.requests.Load(); n != 2 {
		t.Fatalf("after the flight: %d requests, want 2", n)
	}
}

// TestRunAllBoundsConcurrency measures the requests in flight at the server.
func TestRunAllBoundsConcurrency(t *testing.T) {
	noLeaks(t)
	now := time.Now().Truncate(time.Second)
	p := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormData(now)})
	px := newProxy(t, p.URL)
	px.delay = 100 * time.Millisecond
	const limit, n = 3, 12
	r := newRunner(t, px.URL, RunnerOptions{Concurrency: limit})
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = Request{Key: fmt.Sprint(i), Expr: fmt.Sprintf("stormctl_pool_in_use + %d", i), Time: now}
	}
	results := r.RunAll(context.Background(), reqs)
	if got := px.maxInFlight.Load(); got != limit {
		t.Errorf("max in flight = %d, want %d", got, limit)
	}
	if got := px.requests.Load(); got != n {
		t.Errorf("requests = %d, want %d", got, n)
	}
	for i, res := range results {
		if res.Err != nil || len(res.Series) != 1 || res.Series[0].Value != float64(40+i) || res.Request.Key != reqs[i].Key {
			t.Fatalf("result %d out of order or wrong: %+v", i, res)
		}
	}
}
