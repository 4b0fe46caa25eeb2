package flagd

import (
	"context"
	"net"
	"net/http"
	"syscall"
	"time"

	"golang.org/x/net/netutil"
)

// Listener limits. Idle clients must not exhaust the server: every
// listener bounds its open connections, and how long a connection may sit
// without sending its request or between requests; the request/response
// listeners (OFREP, management) bound a whole request and response too.
// Streams are not cut by a total write time: each write has its own
// deadline (WriteTimeout), and HTTP/2 pings find peers that vanished.
const (
	DefaultReadTimeout = 10 * time.Second
	DefaultIdleTimeout = 60 * time.Second
	// managementConns is the management listener's own cap: probes and one
	// scraper need a few, and it keeps them when the others are full.
	managementConns = 16
	// reservedFiles is what the process keeps for itself out of its file
	// limit: management connections, Redis, logs, the runtime.
	reservedFiles = managementConns + 48
	// maxConnsCeiling bounds the derived per-listener cap on large limits.
	maxConnsCeiling = 10000
	http2MaxStreams = 250 // per connection
	pingAfter       = 30 * time.Second
	pingTimeout     = 15 * time.Second
)

// DefaultMaxConns is the per-listener cap for sync, evaluation and OFREP
// when none is given: the process's open-file limit, less what it keeps
// for management and Redis, shared by the three, so that together they
// cannot take the descriptors /readyz needs.
func DefaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<31 {
		return maxConnsCeiling
	}
	return min(max((int(rl.Cur)-reservedFiles)/3, 4), maxConnsCeiling)
}

// listenerServer builds the HTTP server and the capped listener of one
// listener ("sync", "eval", "ofrep", "management").
func (s *Server) listenerServer(ctx context.Context, name string, ln net.Listener, h http.Handler) (*http.Server, net.Listener) {
	o := s.opts
	srv := &http.Server{
		Handler:           writeDeadlines(h, o.WriteTimeout),
		ReadHeaderTimeout: o.ReadTimeout,
		IdleTimeout:       o.IdleTimeout,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: http2MaxStreams,
			SendPingTimeout: pingAfter, PingTimeout: pingTimeout},
	}
	conns := o.MaxConns
	switch name {
	case "ofrep", "management":
		// Request/response only: a slow body or a client that does not
		// read its answer is dropped whole.
		srv.ReadTimeout, srv.WriteTimeout = o.ReadTimeout, o.ReadTimeout+o.WriteTimeout
		if name == "management" {
			conns = managementConns
		}
	}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	srv.Protocols.SetUnencryptedHTTP2(true) // gRPC clients speak h2c
	return srv, netutil.LimitListener(ln, conns)
}
