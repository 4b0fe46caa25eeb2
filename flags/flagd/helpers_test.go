package flagd_test

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// writer writes levers the way the control plane's apply script does (SET
// with PXAT, index, version, change message); the end-to-end tests in
// cmd/stormctl go through the real commands instead.
type writer struct {
	c    *redis.Client
	keys lever.Keys
}

func (w writer) set(t testing.TB, kind lever.Kind, target, value string, ttl time.Duration) {
	t.Helper()
	now := time.Now().Truncate(time.Millisecond)
	l := lever.Lever{Kind: kind, Target: target, Value: value, ActionID: "act-" + lever.Member(kind, target), Actor: "alice",
		Reason: "test", Incident: "INC-1", CreatedAt: now, ExpiresAt: now.Add(ttl)}
	w.write(t, kind, target, &l)
}

func (w writer) release(t testing.TB, kind lever.Kind, target string) { w.write(t, kind, target, nil) }

// write bumps the member's version and sets l (nil: deletes the lever),
// indexes it and publishes the change, in one transaction.
func (w writer) write(t testing.TB, kind lever.Kind, target string, l *lever.Lever) {
	t.Helper()
	ctx := context.Background()
	m := lever.Member(kind, target)
	v, err := w.c.HIncrBy(ctx, w.keys.Versions(), m, 1).Result()
	if err != nil {
		t.Fatal(err)
	}
	change := lever.Change{Op: lever.OpDel, Kind: kind, Target: target, Version: v}
	if l != nil {
		l.Version = v
		change.Op, change.Lever = lever.OpSet, l
	}
	msg, _ := json.Marshal(change)
	_, err = w.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if l == nil {
			p.Del(ctx, w.keys.Lever(kind, target))
			p.ZRem(ctx, w.keys.Index(), m)
		} else {
			raw, _ := json.Marshal(l)
			p.SetArgs(ctx, w.keys.Lever(kind, target), raw, redis.SetArgs{ExpireAt: l.ExpiresAt})
			p.ZAdd(ctx, w.keys.Index(), redis.Z{Score: float64(l.ExpiresAt.UnixMilli()), Member: m})
		}
		p.Publish(ctx, w.keys.Changes(), msg)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// env is a real redis-server and a flagd server on loopback ports.
type env struct {
	redis  *testenv.Redis
	w      writer
	srv    *flagd.Server
	client *redis.Client
}

func startEnv(t testing.TB, opts flagd.Options) *env {
	t.Helper()
	return startEnvOn(t, testenv.StartRedis(t, testenv.RedisOptions{}), opts)
}

func newWriter(t testing.TB, rs *testenv.Redis) writer {
	w := writer{c: redis.NewClient(&redis.Options{Addr: rs.Addr}), keys: lever.NewKeys("")}
	t.Cleanup(func() { _ = w.c.Close() })
	return w
}

// startEnvOn starts a flagd server reading rs (which may be down).
func startEnvOn(t testing.TB, rs *testenv.Redis, opts flagd.Options) *env {
	t.Helper()
	e := &env{redis: rs, w: newWriter(t, rs)}
	e.client = redis.NewClient(&redis.Options{Addr: rs.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = e.client.Close() })
	if opts.Redis == nil {
		opts.Redis = e.client
	}
	for _, a := range []*string{&opts.SyncAddr, &opts.EvalAddr, &opts.OFREPAddr, &opts.ManagementAddr} {
		if *a == "" {
			*a = "127.0.0.1:0"
		}
	}
	srv, err := flagd.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return e
}

func port(t testing.TB, addr string) uint16 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(n)
}

// eventually polls cond every few milliseconds until it holds or timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
