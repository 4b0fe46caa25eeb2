package lab

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// expiryTick is how often the embedded server learns that time has passed.
const expiryTick = 50 * time.Millisecond

// EmbeddedRedis is a Redis-protocol server (miniredis: scripts, streams,
// pub/sub, expiry) on a loopback port, so a lab needs no set-up. miniredis
// only expires keys when told that time has passed; EmbeddedRedis sets its
// clock and fast-forwards it every 50ms, so levers and acknowledgements
// expire on the wall clock as on redis-server, never early and at most one
// tick late (TIME and stream ids lag by as much).
type EmbeddedRedis struct {
	Addr string // host:port
	URL  string // redis://Addr

	m    *miniredis.Miniredis
	stop chan struct{}
	done sync.WaitGroup
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
	m.SetTime(time.Now())
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("embedded redis: %w", err)
	}
	e := &EmbeddedRedis{Addr: m.Addr(), URL: "redis://" + m.Addr(), m: m, stop: make(chan struct{})}
	e.done.Add(1)
	go e.expire()
	return e, nil
}

func (e *EmbeddedRedis) expire() {
	defer e.done.Done()
	t := time.NewTicker(expiryTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			// A TTL given since the last tick was counted from that tick's
			// time, so it is never cut short.
			now := time.Now()
			e.m.SetTime(now)
			e.m.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Close stops the server.
func (e *EmbeddedRedis) Close() {
	close(e.stop)
	e.done.Wait()
	e.m.Close()
}
