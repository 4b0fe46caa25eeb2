package resilience

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"time"
)

const (
	// IdempotencyKeyHeader carries one key per logical request on every
	// attempt of a POST or PATCH, so a server can apply it once.
	IdempotencyKeyHeader = "Idempotency-Key"
	// ShedHeader marks a 503 written by Shed, so the caller meters the
	// attempt as outcome "shed" rather than "error".
	ShedHeader = "Stormctl-Shed"
)

// drainLimit is how much of a failed response's body is read before it is
// closed, so its connection can be reused without reading a huge error page.
const drainLimit = 4 << 10

// Transport is an http.RoundTripper that runs every request through a
// Retrier: one Transport (and http.Client) per dependency.
//
// Requests whose body cannot be replayed (a body without GetBody; requests
// from http.NewRequest with a bytes or strings reader have one) get one
// attempt. The per-attempt timeout covers reading the response body, until
// the caller closes it.
type Transport struct {
	Base    http.RoundTripper // nil: http.DefaultTransport
	Retrier *Retrier
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if t.Retrier == nil {
		return base.RoundTrip(req)
	}
	header := req.Header
	if (req.Method == http.MethodPost || req.Method == http.MethodPatch) && req.Header.Get(IdempotencyKeyHeader) == "" {
		// A RoundTripper must not modify the caller's request.
		header = req.Header.Clone()
		if header == nil {
			header = http.Header{}
		}
		header.Set(IdempotencyKeyHeader, rand.Text())
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	limit := 0
	if hasBody && req.GetBody == nil {
		limit = 1
	}
	sent := false
	resp, err := run(req.Context(), t.Retrier, limit, func(ctx context.Context) (*http.Response, error) {
		areq := req.WithContext(ctx)
		areq.Header = header
		if sent && hasBody {
			body, err := req.GetBody()
			if err != nil {
				return nil, &ClassifiedError{Class: Permanent, Err: err}
			}
			areq.Body = body
		}
		sent = true
		return base.RoundTrip(areq)
	}, judgeResponse, releaseResponse)
	if !sent && hasBody {
		_ = req.Body.Close()
	}
	return resp, err
}

// CloseIdleConnections closes the base transport's idle connections, so
// http.Client.CloseIdleConnections works through a Transport.
func (t *Transport) CloseIdleConnections() {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if c, ok := base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func judgeResponse(resp *http.Response, err error, now time.Time) judgement {
	return judgement{class: Classify(err, resp), retryAfter: retryAfter(err, resp, now),
		shed: resp != nil && resp.Header.Get(ShedHeader) != ""}
}

func releaseResponse(resp *http.Response, cancel context.CancelFunc, final bool) *http.Response {
	switch {
	case resp == nil || resp.Body == nil:
		cancel()
	case !final:
		_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
		_ = resp.Body.Close()
		cancel()
	default:
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	}
	return resp
}

// cancelBody ends the attempt's context when the caller closes the body,
// not when RoundTrip returns, so the body can still be read.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
