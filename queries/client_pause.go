package queries

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxRetryAfter caps how long one Retry-After pauses a client: a server that
// asks for an hour must not blind the dashboard for an hour.
const MaxRetryAfter = 5 * time.Minute

// PausedError is returned, without touching the network, for a request made
// while the server's Retry-After is still running.
type PausedError struct {
	Until  time.Time
	Status int // the 429 or 503 that asked for the pause
}

func (e *PausedError) Error() string {
	return fmt.Sprintf("not sent: the server answered %d with Retry-After, paused until %s",
		e.Status, e.Until.Format(time.TimeOnly))
}

// pacer records Retry-After on 429 and 503 responses and refuses every
// request until then: a struggling server gets nothing more from stormctl.
type pacer struct {
	next http.RoundTripper
	now  func() time.Time

	mu     sync.Mutex
	paused time.Time
	status int
}

func (p *pacer) RoundTrip(req *http.Request) (*http.Response, error) {
	if paused := p.pausedAt(p.now()); paused != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, paused
	}
	resp, err := p.next.RoundTrip(req)
	if err != nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return resp, err
	}
	now := p.now()
	if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now); ok && d > 0 {
		p.mu.Lock()
		if t := now.Add(d); t.After(p.paused) {
			p.paused, p.status = t, resp.StatusCode
		}
		p.mu.Unlock()
	}
	return resp, err
}

// pausedAt is the error for a request at now, nil when none is paused.
func (p *pacer) pausedAt(now time.Time) *PausedError {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Before(p.paused) {
		return &PausedError{Until: p.paused, Status: p.status}
	}
	return nil
}

func (p *pacer) until() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// parseRetryAfter reads a Retry-After value, delay-seconds or an HTTP date,
// as a duration from now, capped at MaxRetryAfter.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil {
		if secs > uint64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter, true
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	} else {
		return 0, false
	}
	return max(0, min(d, MaxRetryAfter)), true
}
