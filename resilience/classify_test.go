package resilience

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

func TestClassifyResponses(t *testing.T) {
	for _, tc := range []struct {
		code       int
		retryAfter string
		want       Class
	}{
		{200, "", Success}, {204, "", Success}, {304, "", Success},
		{400, "", ClientError}, {401, "", ClientError}, {404, "", ClientError}, {409, "", ClientError},
		{429, "", ThrottledNoHint}, {429, "soon", ThrottledNoHint}, {429, "2", Throttled},
		{429, "Wed, 21 Oct 2015 07:28:00 GMT", Throttled},
		{500, "", ServerError}, {501, "", ServerError},
		{502, "", Unavailable}, {503, "", Unavailable}, {503, "1", Unavailable}, {504, "", Unavailable},
	} {
		resp := &http.Response{StatusCode: tc.code, Header: http.Header{}}
		if tc.retryAfter != "" {
			resp.Header.Set("Retry-After", tc.retryAfter)
		}
		if got := Classify(nil, resp); got != tc.want {
			t.Errorf("%d Retry-After %q: got %s, want %s", tc.code, tc.retryAfter, got, tc.want)
		}
	}
	if got := Classify(nil, nil); got != Success {
		t.Errorf("nil error, no response: got %s", got)
	}
}

func TestClassifyErrors(t *testing.T) {
	refused := dialClosedPort(t)
	for _, tc := range []struct {
		name string
		err  error
		want Class
	}{
		{"connection refused", refused, ConnectError},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, Reset},
		{"eof", io.EOF, Reset},
		{"unexpected eof", fmt.Errorf("body: %w", io.ErrUnexpectedEOF), Reset},
		{"per-attempt timeout", fmt.Errorf("get: %w", context.DeadlineExceeded), Timeout},
		{"canceled", fmt.Errorf("get: %w", context.Canceled), Canceled},
		{"no such host", &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", IsNotFound: true}}, Permanent},
		{"dns timeout", &net.OpError{Op: "dial", Err: &net.DNSError{Err: "timeout", IsTimeout: true}}, ConnectError},
		{"classified", fmt.Errorf("grpc: %w", &ClassifiedError{Class: Unavailable, Err: errors.New("x")}), Unavailable},
		{"other", errors.New("x509: certificate signed by unknown authority"), Permanent},
	} {
		if got := Classify(tc.err, nil); got != tc.want {
			t.Errorf("%s (%v): got %s, want %s", tc.name, tc.err, got, tc.want)
		}
	}
}

// dialClosedPort returns the real error of connecting to a port nobody
// listens on.
func dialClosedPort(t *testing.T) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr, nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	_, err = tr.RoundTrip(req)
	if err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
	return err
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false}, {" ", 0, false}, {"0", 0, true}, {"1", time.Second, true}, {" 120 ", 2 * time.Minute, true},
		{"-1", 0, false}, {"+1", 0, false}, {"1.5", 0, false}, {"soon", 0, false},
		{"99999999999999999999999", maxRetryAfter, true},
		{"Wed, 21 Oct 2015 07:28:30 GMT", 30 * time.Second, true},
		{"Wed, 21 Oct 2015 07:27:00 GMT", 0, true},
		{"Wed, 21 Oct 2099 07:28:00 GMT", maxRetryAfter, true},
	} {
		got, ok := ParseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "120", "-5", "1e3", "Wed, 21 Oct 2015 07:28:00 GMT",
		"Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "18446744073709551616"} {
		f.Add(s)
	}
	now := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseRetryAfter(v, now)
		if d < 0 || d > maxRetryAfter {
			t.Fatalf("ParseRetryAfter(%q) = %v out of [0, %v]", v, d, maxRetryAfter)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v with ok false", v, d)
		}
		resp := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {v}}}
		if c := Classify(nil, resp); (c == Throttled) != ok {
			t.Fatalf("Retry-After %q: class %s, parse ok %v", v, c, ok)
		}
	})
}
