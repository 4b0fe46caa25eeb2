package resilience

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hangUp closes the connection without a response: with linger 0 the
// client sees a reset, otherwise EOF.
func hangUp(reset bool) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, _ *http.Request, n int) {
		if n > 2 {
			_, _ = io.WriteString(w, "ok")
			return
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		if reset {
			_ = c.(*net.TCPConn).SetLinger(0)
		}
		_ = c.Close()
	}
}

func TestResetsAndDroppedConnectionsAreRetried(t *testing.T) {
	for _, reset := range []bool{true, false} {
		srv := newServer(t, hangUp(reset))
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			srv.hits.Store(0)
			req, _ := http.NewRequest(method, srv.URL, strings.NewReader("x"))
			resp, err := get2(client(t, newRetrier(t, Config{})), req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("reset=%v %s: %v %v", reset, method, resp, err)
			}
			if got := srv.hits.Load(); got != 3 {
				t.Errorf("reset=%v %s: %d attempts, want 3", reset, method, got)
			}
		}
	}
}

type countingTransport struct {
	base http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(req)
}

func TestConnectErrorsAreRetried(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	ct := &countingTransport{base: base}
	c := &http.Client{Transport: &Transport{Base: ct, Retrier: newRetrier(t, Config{Policy: Policy{MaxAttempts: 4}})}}
	_, err = c.Get("http://" + addr)
	if Classify(err, nil) != ConnectError {
		t.Fatalf("err = %v, want a connect error", err)
	}
	if got := ct.n.Load(); got != 4 {
		t.Errorf("%d attempts, want 4", got)
	}
}

func TestUnreplayableBodyGetsOneAttempt(t *testing.T) {
	srv := newServer(t, statuses(503))
	req, _ := http.NewRequest(http.MethodPost, srv.URL, io.NopCloser(strings.NewReader("once")))
	if req.GetBody != nil {
		t.Fatal("test needs a request without GetBody")
	}
	if _, err := get2(client(t, newRetrier(t, Config{})), req); err != nil {
		t.Fatal(err)
	}
	if got := srv.hits.Load(); got != 1 {
		t.Errorf("%d attempts, want 1", got)
	}
}

func TestFinalBodyIsReadableAfterRoundTrip(t *testing.T) {
	payload := bytes.Repeat([]byte("storm"), 200_000)
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 1 {
			w.WriteHeader(503)
			_, _ = w.Write(payload) // drained partially, then dropped
			return
		}
		_, _ = w.Write(payload)
	})
	resp, err := client(t, newRetrier(t, Config{})).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || !bytes.Equal(body, payload) {
		t.Fatalf("read %d bytes, err %v; want %d", len(body), err, len(payload))
	}
}

func TestDo(t *testing.T) {
	r := newRetrier(t, Config{Policy: Policy{MaxAttempts: 4}})
	calls := 0
	v, err := Do(context.Background(), r, func(ctx context.Context) (string, error) {
		calls++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("attempt context has no deadline")
		}
		if calls < 3 {
			return "", &ClassifiedError{Class: Unavailable, Err: errors.New("try later")}
		}
		return "done", nil
	})
	if v != "done" || err != nil || calls != 3 {
		t.Fatalf("Do = %q, %v after %d calls", v, err, calls)
	}

	// The last error comes back unchanged for the caller's errors.Is.
	errBad := errors.New("bad request")
	calls = 0
	_, err = Do(context.Background(), r, func(context.Context) (int, error) {
		calls++
		return 0, errBad
	})
	if !errors.Is(err, errBad) || calls != 1 {
		t.Errorf("permanent error: %v after %d calls", err, calls)
	}

	// A server's Retry-After reaches the sleep.
	clock := newFakeClock()
	r = newRetrier(t, Config{Clock: clock.Now, Sleep: clock.Sleep})
	start := clock.Now()
	calls = 0
	_, _ = Do(context.Background(), r, func(context.Context) (int, error) {
		calls++
		if calls == 1 {
			return 0, &ClassifiedError{Class: Throttled, RetryAfter: 3 * time.Second}
		}
		return 1, nil
	})
	if el := clock.Now().Sub(start); el < 3*time.Second {
		t.Errorf("slept %v, Retry-After was 3s", el)
	}

	// Cancellation stops at once.
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	_, err = Do(ctx, newRetrier(t, Config{}), func(context.Context) (int, error) {
		calls++
		cancel()
		return 0, &ClassifiedError{Class: Unavailable}
	})
	if calls != 1 || !errors.Is(err, context.Canceled) && Classify(err, nil) != Unavailable {
		t.Errorf("canceled: %v after %d calls", err, calls)
	}

	if v, err := Do(context.Background(), nil, func(context.Context) (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("nil retrier: %d %v", v, err)
	}
}
