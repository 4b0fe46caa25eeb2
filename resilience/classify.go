package resilience

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Class is the typed classification of one attempt's result. It decides
// whether the attempt may be retried, whether it counts against the breaker,
// and which outcome it is metered as.
type Class uint8

// The classes. Only ConnectError, Reset, Timeout, Unavailable, Throttled and
// ServerError may appear in Policy.RetryOn.
const (
	Success         Class = iota // an answer that is not a failure (1xx–3xx), or a nil error
	ConnectError                 // no connection was established: nothing reached the server
	Reset                        // the connection broke before a response (reset, EOF, broken pipe)
	Timeout                      // the attempt's own timeout expired
	Unavailable                  // 502, 503 or 504
	Throttled                    // 429 with a valid Retry-After
	ThrottledNoHint              // 429 without Retry-After: never retried, the server gave no safe time
	ClientError                  // any other 4xx: a retry would send the same bad request
	ServerError                  // any other 5xx (500, 501, …): the request itself may be the cause
	Canceled                     // the caller's context was canceled
	Permanent                    // any other error
)

var classNames = [...]string{"success", "connect", "reset", "timeout", "unavailable", "throttled",
	"throttled_no_hint", "client_error", "server_error", "canceled", "permanent"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// retryable reports whether c may be listed in Policy.RetryOn at all.
func (c Class) retryable() bool {
	switch c {
	case ConnectError, Reset, Timeout, Unavailable, Throttled, ServerError:
		return true
	}
	return false
}

// failure reports whether c says the dependency is unhealthy, which is what
// a breaker counts. Client errors and throttling are answers from a healthy
// dependency; a canceled attempt says nothing about it.
func (c Class) failure() bool {
	switch c {
	case ConnectError, Reset, Timeout, Unavailable, ServerError:
		return true
	}
	return false
}

// outcome is the stormctl_attempts_total outcome label of c.
func (c Class) outcome() string {
	switch c {
	case Success:
		return OutcomeSuccess
	case Timeout:
		return OutcomeTimeout
	case Throttled, ThrottledNoHint:
		return OutcomeThrottled
	}
	return OutcomeError
}

// ClassifiedError lets an operation run by Do state its own class, e.g. a
// gRPC or database error that Classify cannot recognise, or a throttling
// answer with the time the server asked to wait.
type ClassifiedError struct {
	Class      Class
	RetryAfter time.Duration // honoured as a minimum sleep before the next attempt
	Err        error
}

func (e *ClassifiedError) Error() string {
	if e.Err == nil {
		return e.Class.String()
	}
	return e.Err.Error()
}

func (e *ClassifiedError) Unwrap() error { return e.Err }

// Classify returns the class of one attempt from its error or, when the
// error is nil, its HTTP response (nil for a non-HTTP success).
func Classify(err error, resp *http.Response) Class {
	if err != nil {
		return classifyErr(err)
	}
	if resp == nil {
		return Success
	}
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests:
		if _, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Time{}); ok {
			return Throttled
		}
		return ThrottledNoHint
	case code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout:
		return Unavailable
	case code >= 500:
		return ServerError
	case code >= 400:
		return ClientError
	}
	return Success
}

func classifyErr(err error) Class {
	var ce *ClassifiedError
	if errors.As(err, &ce) {
		return ce.Class
	}
	if errors.Is(err, context.Canceled) {
		return Canceled
	}
	// A name that does not exist will not exist on the next attempt either.
	var dns *net.DNSError
	if errors.As(err, &dns) && !dns.IsTemporary && !dns.IsTimeout {
		return Permanent
	}
	var op *net.OpError
	if (errors.As(err, &op) && op.Op == "dial") || errors.Is(err, syscall.ECONNREFUSED) {
		return ConnectError
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return Reset
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return Timeout
	}
	return Permanent
}

// maxRetryAfter bounds what a server may ask for, so arithmetic on it never
// overflows; the deadline check refuses such a wait anyway.
const maxRetryAfter = 24 * time.Hour

// ParseRetryAfter parses a Retry-After header value (delay-seconds or an
// HTTP-date, RFC 9110 §10.2.3) into the wait from now. A date in the past
// means no wait; ok is false for an absent or malformed value.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		// ParseUint saturates on ErrRange, which the min below bounds.
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		return time.Duration(min(n, uint64(maxRetryAfter/time.Second))) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxRetryAfter), true
}

// retryAfter is the Retry-After of a response or a ClassifiedError.
func retryAfter(err error, resp *http.Response, now time.Time) time.Duration {
	var ce *ClassifiedError
	if errors.As(err, &ce) {
		return max(ce.RetryAfter, 0)
	}
	if resp != nil {
		d, _ := ParseRetryAfter(resp.Header.Get("Retry-After"), now)
		return d
	}
	return 0
}
