package queries

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// flaky answers 500 while failing is set, else a one-series vector.
type flaky struct {
	*httptest.Server
	failing  atomic.Bool
	requests atomic.Int64
}

func newFlaky(t *testing.T) *flaky {
	f := &flaky{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if f.failing.Load() {
			w.WriteHeader(500)
			w.Write([]byte("boom"))
			return
		}
		w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"service":"checkout"},"value":[1,"2.5"]}]}}`))
	}))
	t.Cleanup(f.Close)
	return f
}

func TestRunnerBackoff(t *testing.T) {
	srv := newFlaky(t)
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	r := newRunner(t, srv.URL, RunnerOptions{BackoffBase: time.Second, BackoffMax: 8 * time.Second,
		Now: clock.Now, Rand: rand.New(rand.NewPCG(1, 2))})
	ctx := context.Background()
	req := Request{Key: "amp|checkout", Expr: "amp"}
	run := func(wantRequests int64) Result {
		t.Helper()
		res := r.Run(ctx, req)
		if got := srv.requests.Load(); got != wantRequests {
			t.Fatalf("requests = %d, want %d", got, wantRequests)
		}
		return res
	}
	if res := run(1); res.Err != nil || res.Stale || res.Series[0].Value != 2.5 {
		t.Fatalf("first run: %+v", res)
	}
	srv.failing.Store(true)
	sent := int64(1)
	for i, ceiling := range []time.Duration{1, 2, 4, 8, 8} {
		ceiling *= time.Second
		sent++
		res := run(sent)
		if res.Err == nil || !res.Stale || len(res.Series) != 1 || res.Series[0].Value != 2.5 {
			t.Fatalf("failure %d: want the last good result, stale, with the error: %+v", i+1, res)
		}
		assertServerError(t, res.Err, srv.URL, "HTTP 500: boom")
		delay := r.keys[req.Key].retryAt.Sub(clock.Now())
		if delay <= 0 || delay > ceiling {
			t.Fatalf("failure %d: backoff %v outside (0, %v]", i+1, delay, ceiling)
		}
		// During the backoff nothing reaches the server, for this key.
		clock.Add(delay - time.Millisecond)
		if res := run(sent); !res.Stale || res.Err == nil || res.Series[0].Value != 2.5 {
			t.Fatalf("during backoff: %+v", res)
		}
		clock.Add(time.Millisecond)
	}
	// Another key is not held back by this one's backoff.
	sent++
	if res := r.Run(ctx, Request{Key: "other", Expr: "amp"}); res.Err == nil || srv.requests.Load() != sent {
		t.Fatalf("another key: %+v, %d requests; want it sent", res, srv.requests.Load())
	}
	srv.failing.Store(false)
	sent++
	if res := run(sent); res.Err != nil || res.Stale {
		t.Fatalf("after recovery: %+v", res)
	}
	if st := r.keys[req.Key]; st.failures != 0 || !st.retryAt.IsZero() {
		t.Fatalf("state after recovery: %+v", st)
	}
}

// TestBackoffFullJitter: delays spread over the whole [0, ceiling] range
// (full jitter), and the ceiling doubles up to the cap.
func TestBackoffFullJitter(t *testing.T) {
	r := NewRunner(&Client{}, RunnerOptions{BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second,
		Rand: rand.New(rand.NewPCG(7, 7))})
	for failures, ceiling := range map[int]time.Duration{1: 100e6, 2: 200e6, 3: 400e6, 4: 800e6, 5: time.Second, 60: time.Second} {
		lo, hi, sum := ceiling, time.Duration(0), time.Duration(0)
		const n = 5000
		for range n {
			d := r.jitter(failures)
			if d < 0 || d > ceiling {
				t.Fatalf("failures=%d: delay %v outside [0, %v]", failures, d, ceiling)
			}
			lo, hi, sum = min(lo, d), max(hi, d), sum+d
		}
		if lo > ceiling/20 || hi < ceiling*19/20 {
			t.Errorf("failures=%d: delays span [%v, %v], want nearly [0, %v]", failures, lo, hi, ceiling)
		}
		if mean := sum / n; mean < ceiling*45/100 || mean > ceiling*55/100 {
			t.Errorf("failures=%d: mean %v, want about %v", failures, mean, ceiling/2)
		}
	}
}

// TestRunnerRetryAfter: a 429 with Retry-After stops every request to the
// server, for every key and for direct API calls, until it passes.
func TestRunnerRetryAfter(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if requests.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Write([]byte(`{"status":"success","data":{"resultType":"scalar","result":[1,"7"]}}`))
	}))
	defer srv.Close()
	r := newRunner(t, srv.URL, RunnerOptions{})
	ctx := context.Background()
	res := r.Run(ctx, Request{Key: "a", Expr: "7"})
	assertServerError(t, res.Err, srv.URL, "rate limited (HTTP 429); Retry-After: paused until ")
	until := r.c.PausedUntil()
	if d := time.Until(until); d <= 0 || d > time.Second {
		t.Fatalf("paused until %v, %v from now; want within 1s", until, d)
	}

	res = r.Run(ctx, Request{Key: "b", Expr: "7"})
	var paused *PausedError
	if !res.Stale || !errors.As(res.Err, &paused) || !paused.Until.Equal(until) || paused.Status != 429 {
		t.Fatalf("key b during the pause: %+v", res)
	}
	assertServerError(t, res.Err, srv.URL, "not sent: the server answered 429 with Retry-After, paused until")
	if _, _, _, err := r.c.API.Query(ctx, "7", time.Time{}); !errors.As(err, &paused) {
		t.Fatalf("direct API call during the pause: %v", err)
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("%d requests during the pause, want only the first", n)
	}

	time.Sleep(time.Until(until) + 10*time.Millisecond)
	if res := r.Run(ctx, Request{Key: "b", Expr: "7"}); res.Err != nil || res.Stale || res.Series[0].Value != 7 {
		t.Fatalf("after the pause: %+v", res)
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(3*time.Second).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	r := newRunner(t, srv.URL, RunnerOptions{})
	res := r.Run(context.Background(), Request{Expr: "up"})
	assertServerError(t, res.Err, srv.URL, "unavailable (HTTP 503); Retry-After: paused until")
	if d := time.Until(r.c.PausedUntil()); d < time.Second || d > 3*time.Second {
		t.Fatalf("paused for %v, want 2-3s (the date has whole seconds)", d)
	}
}

// TestRunnerDecodesWarningsAndInfos uses a fake: Prometheus 2.42 sends no
// infos.
func TestRunnerDecodesWarningsAndInfos(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]}]},` +
			`"warnings":["remote_read: partial data"],"infos":["metric might not be a counter"]}`))
	}))
	defer srv.Close()
	res := newRunner(t, srv.URL, RunnerOptions{}).Run(context.Background(), Request{Expr: "x"})
	if res.Err != nil || strings.Join(res.Warnings, ";") != "remote_read: partial data" ||
		strings.Join(res.Infos, ";") != "metric might not be a counter" || res.Series[0].Value == res.Series[0].Value {
		t.Fatalf("%+v", res)
	}
}

// TestRunCallerCancel: a caller that gives up returns at once; the shared
// evaluation goes on for the others.
func TestRunCallerCancel(t *testing.T) {
	noLeaks(t)
	gate := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-gate
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`))
	}))
	defer srv.Close()
	r := newRunner(t, srv.URL, RunnerOptions{})
	done := make(chan Result)
	go func() { done <- r.Run(context.Background(), Request{Key: "k", Expr: "1"}) }()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res := r.Run(ctx, Request{Key: "k", Expr: "1"})
	assertServerError(t, res.Err, srv.URL, "timed out")
	close(gate)
	if res := <-done; res.Err != nil || res.Series[0].Value != 1 {
		t.Fatalf("the other caller: %+v", res)
	}
}
