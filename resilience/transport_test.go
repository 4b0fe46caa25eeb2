package resilience

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// attemptLog is a base RoundTripper recording when each attempt started and
// the deadline of its context.
type attemptLog struct {
	base http.RoundTripper
	mu   sync.Mutex
	log  []attemptRecord
}

type attemptRecord struct{ start, deadline time.Time }

func (a *attemptLog) RoundTrip(req *http.Request) (*http.Response, error) {
	dl, _ := req.Context().Deadline()
	a.mu.Lock()
	a.log = append(a.log, attemptRecord{time.Now(), dl})
	a.mu.Unlock()
	return a.base.RoundTrip(req)
}

func (a *attemptLog) records() []attemptRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]attemptRecord(nil), a.log...)
}

func TestNoAttemptStartsThatCannotFinishBeforeTheDeadline(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) { <-r.Context().Done() })
	const perAttempt = 100 * time.Millisecond
	r := newRetrier(t, Config{Sleep: sleepCtx, Policy: Policy{MaxAttempts: 10, PerAttemptTimeout: perAttempt,
		BackoffBase: 10 * time.Millisecond, BackoffCap: 20 * time.Millisecond, RetryOn: []Class{Timeout}}})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	log := &attemptLog{base: base}
	c := &http.Client{Transport: &Transport{Base: log, Retrier: r}}

	ctx, cancel := context.WithTimeout(context.Background(), 350*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	_, err := c.Do(req)
	returned := time.Now()
	if Classify(err, nil) != Timeout {
		t.Fatalf("err = %v, want the last attempt's timeout", err)
	}
	recs := log.records()
	// 0–100ms, ≤120–220ms, ≤240–340ms; a fourth cannot finish by 350ms.
	if len(recs) < 2 || len(recs) > 3 {
		t.Fatalf("%d attempts, want 2 or 3", len(recs))
	}
	for i, a := range recs {
		if a.deadline.After(deadline) {
			t.Errorf("attempt %d may run until %v, past the deadline by %v", i+1, a.deadline, a.deadline.Sub(deadline))
		}
		// A retry gets its whole timeout: it was not shrunk to fit.
		if i > 0 && a.deadline.Sub(a.start) < perAttempt-10*time.Millisecond {
			t.Errorf("attempt %d got %v of its %v timeout", i+1, a.deadline.Sub(a.start), perAttempt)
		}
	}
	if returned.After(deadline) {
		t.Errorf("returned %v after the deadline", returned.Sub(deadline))
	}
}

func TestFirstAttemptShrinksToAShortDeadline(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) { <-r.Context().Done() })
	r := newRetrier(t, Config{Policy: Policy{PerAttemptTimeout: time.Second, RetryOn: []Class{Timeout}}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if _, err := client(t, r).Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if el := time.Since(start); el > 500*time.Millisecond {
		t.Errorf("took %v, the caller's deadline was 50ms", el)
	}
	if srv.hits.Load() != 1 {
		t.Errorf("%d attempts, want 1", srv.hits.Load())
	}
}

func TestIdempotencyKeyRepeatedOnEveryAttempt(t *testing.T) {
	for _, method := range []string{http.MethodPost, http.MethodPatch} {
		srv := newServer(t, statuses(503, 502, 200))
		c := client(t, newRetrier(t, Config{}))
		req, _ := http.NewRequest(method, srv.URL, strings.NewReader(`{"amount":42}`))
		resp, err := c.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", method, resp, err)
		}
		_ = resp.Body.Close()
		if req.Header.Get(IdempotencyKeyHeader) != "" {
			t.Errorf("%s: the caller's request was modified", method)
		}
		key := srv.reqs[0].Header.Get(IdempotencyKeyHeader)
		if len(srv.reqs) != 3 || len(key) < 16 {
			t.Fatalf("%s: %d attempts, key %q", method, len(srv.reqs), key)
		}
		for i, r := range srv.reqs {
			if got := r.Header.Get(IdempotencyKeyHeader); got != key {
				t.Errorf("%s attempt %d: key %q, want %q", method, i+1, got, key)
			}
			if srv.bodies[i] != `{"amount":42}` {
				t.Errorf("%s attempt %d: body %q", method, i+1, srv.bodies[i])
			}
		}
	}

	// A second logical request gets a new key; the caller's own key is kept.
	srv := newServer(t, statuses(503, 200))
	c := client(t, newRetrier(t, Config{}))
	first := ""
	for i, key := range []string{"", "", "caller-key-1"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
		if key != "" {
			req.Header.Set(IdempotencyKeyHeader, key)
		}
		if _, err := get2(c, req); err != nil {
			t.Fatal(err)
		}
		got := srv.reqs[len(srv.reqs)-1].Header.Get(IdempotencyKeyHeader)
		switch {
		case i == 0:
			first = got
		case i == 1 && got == first:
			t.Errorf("two logical requests share the key %q", got)
		case i == 2 && got != key:
			t.Errorf("caller's key replaced by %q", got)
		}
	}
	// Idempotent methods carry none.
	if _, err := get(t, c, srv.URL); err != nil {
		t.Fatal(err)
	}
	if k := srv.reqs[len(srv.reqs)-1].Header.Get(IdempotencyKeyHeader); k != "" {
		t.Errorf("GET carried key %q", k)
	}
}

func get2(c *http.Client, req *http.Request) (*http.Response, error) {
	resp, err := c.Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	return resp, err
}

func TestOnlyTransientStatusesAreRetried(t *testing.T) {
	for _, tc := range []struct {
		code, attempts int
	}{
		{400, 1}, {401, 1}, {403, 1}, {404, 1}, {409, 1}, {422, 1}, {429, 1},
		{500, 1}, {501, 1}, {502, 3}, {503, 3}, {504, 3},
	} {
		srv := newServer(t, statuses(tc.code))
		resp, err := get(t, client(t, newRetrier(t, Config{})), srv.URL)
		if err != nil || resp.StatusCode != tc.code {
			t.Fatalf("%d: %v %v", tc.code, resp, err)
		}
		if got := srv.hits.Load(); got != int64(tc.attempts) {
			t.Errorf("%d: %d attempts, want %d", tc.code, got, tc.attempts)
		}
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	throttle := func(after string) func(w http.ResponseWriter, r *http.Request, n int) {
		return func(w http.ResponseWriter, _ *http.Request, n int) {
			if n == 1 {
				w.Header().Set("Retry-After", after)
				w.WriteHeader(http.StatusTooManyRequests)
			}
		}
	}
	srv := newServer(t, throttle("1"))
	r := newRetrier(t, Config{Sleep: sleepCtx})
	if resp, err := get(t, client(t, r), srv.URL); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	if len(srv.reqs) != 2 {
		t.Fatalf("%d attempts, want 2", len(srv.reqs))
	}
	if gap := srv.times[1].Sub(srv.times[0]); gap < time.Second {
		t.Errorf("retried %v after a Retry-After of 1s", gap)
	}

	// A wait past the deadline is not worth a retry.
	srv = newServer(t, throttle("30"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	start := time.Now()
	resp, err := get2(client(t, newRetrier(t, Config{Sleep: sleepCtx})), req)
	if err != nil || resp.StatusCode != 429 || srv.hits.Load() != 1 || time.Since(start) > time.Second {
		t.Errorf("Retry-After past the deadline: %v %v, %d attempts, %v", resp, err, srv.hits.Load(), time.Since(start))
	}
}
