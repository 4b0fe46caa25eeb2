package lab

import (
	"fmt"
	"net"

	"github.com/alicebob/miniredis/v2"
)

// EmbeddedRedis is a Redis-protocol server (miniredis: Lua scripts, streams,
// pub/sub, transactions, expiry) on a loopback port, so a lab needs no
// set-up. By default miniredis expires nothing until told that time has
// passed; EmbeddedRedis runs its TTLs on the wall clock, expired lazily on
// the next command as redis-server does, so levers, rate-limit windows and
// acknowledgements expire as they do in production. It has no ACL: the
// journal says nobody was authenticated.
type EmbeddedRedis struct {
	Addr string // host:port
	URL  string // redis://Addr

	m *miniredis.Miniredis
}

// StartEmbeddedRedis serves on addr, a loopback address ("127.0.0.1:0"
// picks a free port).
func StartEmbeddedRedis(addr string) (*EmbeddedRedis, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("embedded redis %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("embedded redis %q: only loopback addresses are served", addr)
	}
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("embedded redis: %w", err)
	}
	return &EmbeddedRedis{Addr: m.Addr(), URL: "redis://" + m.Addr(), m: m}, nil
}

// Close stops the server.
func (e *EmbeddedRedis) Close() { e.m.Close() }
