package resilience

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is a virtual clock whose Sleep advances it instantly.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.Advance(d)
	return ctx.Err()
}

// noSleep skips backoff sleeps in tests that count attempts, not time.
func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// server is an httptest server answering each request with the next status
// of a script (the last one repeats) and counting what it saw.
type server struct {
	*httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	reqs    []*http.Request
	bodies  []string
	times   []time.Time
	handler func(w http.ResponseWriter, r *http.Request, n int)
}

func newServer(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, n int)) *server {
	t.Helper()
	s := &server{handler: handler}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.hits.Add(1))
		body := make([]byte, 1024)
		k, _ := r.Body.Read(body)
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		s.bodies = append(s.bodies, string(body[:k]))
		s.times = append(s.times, time.Now())
		s.mu.Unlock()
		s.handler(w, r, n)
	}))
	t.Cleanup(s.Close)
	return s
}

// statuses answers the n-th request with codes[n-1], repeating the last.
func statuses(codes ...int) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, _ *http.Request, n int) {
		w.WriteHeader(codes[min(n, len(codes))-1])
	}
}

// newRetrier builds a Retrier for tests: no breaker, no budget and no
// sleeping unless cfg says otherwise.
func newRetrier(t testing.TB, cfg Config) *Retrier {
	t.Helper()
	if cfg.Service == "" {
		cfg.Service, cfg.Dependency = "checkout", "payments"
	}
	if cfg.Sleep == nil {
		cfg.Sleep = noSleep
	}
	if cfg.Budget == (BudgetConfig{}) {
		cfg.Budget.Disabled = true
	}
	if cfg.Breaker == (BreakerConfig{}) {
		cfg.Breaker.Disabled = true
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// client returns an http.Client through r, closing its connections at the end.
func client(t testing.TB, r *Retrier) *http.Client {
	tr := &Transport{Base: &http.Transport{}, Retrier: r}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func get(t testing.TB, c *http.Client, url string) (*http.Response, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err == nil {
		_ = resp.Body.Close()
	}
	return resp, err
}
