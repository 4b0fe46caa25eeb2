package queries

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/stormctl/stormctl/internal/exit"
)

// ServerError is a failed call to Prometheus, said in one line that names
// the address, the cause and, when there is one, what to check. It exits 1.
type ServerError struct {
	Address string // the Prometheus URL
	Op      string // the API call: query, query_range, series, ...
	Cause   string // what went wrong, in a few words
	Hint    string // what to check; "" when nothing specific helps
	Status  int    // the HTTP status, 0 when there was no response
	Err     error  // the underlying error
}

func (e *ServerError) Error() string {
	s := fmt.Sprintf("prometheus %s %s: %s", e.Op, e.Address, e.Cause)
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

func (e *ServerError) Unwrap() error { return e.Err }

// ExitCode implements exit.Coder.
func (e *ServerError) ExitCode() int { return exit.Error }

// Err maps an error from c.API to a *ServerError for op; nil stays nil.
func (c *Client) Err(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *ServerError
	if errors.As(err, &se) {
		return err
	}
	e := &ServerError{Address: c.Address, Op: op, Err: err}
	e.Cause, e.Hint, e.Status = classify(err, c.certAsked.Load(), c.clientCert)
	var paused *PausedError
	if (e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable) && !errors.As(err, &paused) {
		if until := c.PausedUntil(); !until.IsZero() {
			e.Cause += fmt.Sprintf("; Retry-After: paused until %s", until.Format("15:04:05"))
		}
	}
	return e
}

const (
	hintCA         = "set prometheus.tls.ca-file to the CA that signed the server's certificate"
	hintClientCert = "set prometheus.tls.cert-file and prometheus.tls.key-file"
	hintCreds      = "check the credentials: prometheus.bearer-token-file/-env or prometheus.basic-auth"
)

// classify names the cause of a transport or API error. A server that
// refuses a client certificate, or the lack of one, may send an alert or
// just close the connection (TLS 1.3 finishes the client's handshake
// first), so whether the server asked for a certificate and whether one was
// sent decide what such a failure means.
func classify(err error, certAsked, sentCert bool) (cause, hint string, status int) {
	var (
		limit     *LimitError
		paused    *PausedError
		apiErr    *v1.Error
		dnsErr    *net.DNSError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
		netErr    net.Error
	)
	msg := err.Error()
	switch {
	case errors.As(err, &limit):
		return limit.Error(), hintLimit, 0
	case errors.As(err, &paused):
		return paused.Error(), "", paused.Status
	case errors.As(err, &apiErr):
		return apiCause(apiErr)
	case errors.Is(err, context.Canceled):
		return "canceled", "", 0
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timed out", "the server is overloaded or unreachable; a heavy query may need a larger prometheus.timeout", 0
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", "is Prometheus listening at this address?", 0
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("cannot resolve host %q: %s", dnsErr.Name, dnsErr.Err), "check the host in prometheus.url", 0
	case errors.As(err, &authority):
		return "TLS certificate not trusted (signed by an unknown authority)", hintCA, 0
	case errors.As(err, &hostname):
		return "TLS certificate is not valid for " + hostname.Host, "use a host name the certificate lists, or set prometheus.tls.server-name", 0
	case errors.As(err, &invalid):
		return "TLS certificate invalid: " + invalid.Error(), "", 0
	case errors.As(err, &record):
		return "the server does not speak TLS", "use http:// in prometheus.url", 0
	}
	alert := strings.Contains(msg, "tls: certificate required") || strings.Contains(msg, "tls: bad certificate") ||
		strings.Contains(msg, "tls: unknown certificate")
	// HTTP/2 reports a connection closed during its setup without the cause.
	closed := errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(msg, "http2: client conn could not be established")
	switch {
	case (alert || closed && certAsked) && !sentCert:
		return "the server requires a client certificate", hintClientCert, 0
	case alert || closed && certAsked:
		return "the server rejected the client certificate", "check that prometheus.tls.cert-file is signed by a CA the server trusts", 0
	case closed:
		return "connection closed by the server", "", 0
	}
	// The address is already in the message; drop url.Error's copy of it.
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		msg = urlErr.Err.Error()
	}
	return oneLine(msg), "", 0
}

// apiCause reads an error of the v1 API, which carries the status only in
// its message ("client error: 401") and the body in Detail.
func apiCause(e *v1.Error) (cause, hint string, status int) {
	switch e.Type {
	case v1.ErrBadData:
		return "bad PromQL: " + oneLine(strings.TrimPrefix(e.Msg, `invalid parameter "query": `)), "", http.StatusBadRequest
	case v1.ErrExec:
		return "query failed: " + oneLine(e.Msg), "", http.StatusUnprocessableEntity
	case v1.ErrTimeout:
		return "query timed out on the server: " + oneLine(e.Msg), "", http.StatusServiceUnavailable
	case v1.ErrCanceled:
		return "query canceled on the server: " + oneLine(e.Msg), "", http.StatusServiceUnavailable
	case v1.ErrBadResponse:
		return "unexpected response: " + oneLine(e.Msg), "is prometheus.url a Prometheus-compatible API?", 0
	}
	if _, err := fmt.Sscanf(e.Msg[strings.LastIndex(e.Msg, " ")+1:], "%d", &status); err != nil {
		return oneLine(e.Msg), "", 0
	}
	body := bodyMessage(e.Detail)
	switch status {
	case http.StatusUnauthorized:
		return "unauthorized (HTTP 401)", hintCreds, status
	case http.StatusForbidden:
		return "forbidden (HTTP 403)", hintCreds + ", and the tenant header in prometheus.headers", status
	case http.StatusNotFound:
		return "not found (HTTP 404)", "check the path prefix in prometheus.url: a --web.route-prefix, or Mimir's /prometheus", status
	case http.StatusTooManyRequests:
		return "rate limited (HTTP 429)" + suffix(body), "", status
	case http.StatusServiceUnavailable:
		return "unavailable (HTTP 503)" + suffix(body), "", status
	case http.StatusBadRequest:
		if strings.Contains(body, "HTTP request to an HTTPS server") {
			return "the server speaks HTTPS", "use https:// in prometheus.url", status
		}
	}
	return fmt.Sprintf("HTTP %d%s", status, suffix(body)), "", status
}

// bodyMessage extracts Prometheus's error message from a JSON error body,
// or the body itself.
func bodyMessage(body string) string {
	var r struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(body), &r) == nil && r.Error != "" {
		return r.Error
	}
	return body
}

func suffix(s string) string {
	if s = oneLine(s); s == "" {
		return ""
	}
	return ": " + s
}

// oneLine collapses whitespace and bounds the length, so an HTML error page
// or a multi-line message stays one readable line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
