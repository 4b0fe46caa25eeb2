package flags_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/isolated"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// levers writes levers the way the control plane's scripts do (SET with
// PXAT, index, version, change message), without them.
type levers struct {
	c    *redis.Client
	keys lever.Keys
}

func newRedis(t testing.TB, opts testenv.RedisOptions) (*testenv.Redis, *redis.Client, levers) {
	t.Helper()
	srv := testenv.StartRedis(t, opts)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return srv, c, levers{c: c, keys: lever.NewKeys("")}
}

// set applies a lever expiring after ttl; publish=false simulates a lost
// change message.
func (w levers) set(t testing.TB, kind lever.Kind, target, value string, ttl time.Duration, publish bool) lever.Lever {
	t.Helper()
	ctx := context.Background()
	m := lever.Member(kind, target)
	v := w.nextVersion(t, m)
	now := time.Now().Truncate(time.Millisecond)
	l := lever.Lever{Kind: kind, Target: target, Value: value, ActionID: "act-" + m,
		Actor: "alice", Reason: "test", CreatedAt: now, ExpiresAt: now.Add(ttl), Version: v}
	raw, _ := json.Marshal(l)
	msg, _ := json.Marshal(lever.Change{Op: lever.OpSet, Kind: kind, Target: target, Version: v, Lever: &l})
	_, err := w.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SetArgs(ctx, w.keys.Lever(kind, target), raw, redis.SetArgs{ExpireAt: l.ExpiresAt})
		p.ZAdd(ctx, w.keys.Index(), redis.Z{Score: float64(l.ExpiresAt.UnixMilli()), Member: m})
		if publish {
			p.Publish(ctx, w.keys.Changes(), msg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// nextVersion bumps the member's version counter, as every write does.
func (w levers) nextVersion(t testing.TB, member string) int64 {
	t.Helper()
	v, err := w.c.HIncrBy(context.Background(), w.keys.Versions(), member, 1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// release removes a lever, as `stormctl action release` does.
func (w levers) release(t testing.TB, kind lever.Kind, target string) {
	t.Helper()
	ctx := context.Background()
	m := lever.Member(kind, target)
	v := w.nextVersion(t, m)
	msg, _ := json.Marshal(lever.Change{Op: lever.OpDel, Kind: kind, Target: target, Version: v})
	_, err := w.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, w.keys.Lever(kind, target))
		p.ZRem(ctx, w.keys.Index(), m)
		p.Publish(ctx, w.keys.Changes(), msg)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// events records the provider events the SDK delivers to API handlers.
type events struct {
	mu  sync.Mutex
	got []openfeature.EventDetails
	typ []openfeature.EventType
	ch  chan openfeature.EventType
}

// sdk sets p as the provider of an isolated OpenFeature API, waits for its
// initialisation and returns a client and the event log.
func sdk(t testing.TB, p openfeature.FeatureProvider) (*openfeature.Client, *events) {
	t.Helper()
	c, ev, err := sdkInit(t, p)
	if err != nil {
		t.Fatalf("set provider: %v", err)
	}
	return c, ev
}

// sdkInit is sdk returning the initialisation error.
func sdkInit(t testing.TB, p openfeature.FeatureProvider) (*openfeature.Client, *events, error) {
	api := isolated.NewAPI()
	ev := &events{ch: make(chan openfeature.EventType, 256)}
	for _, typ := range []openfeature.EventType{openfeature.ProviderReady, openfeature.ProviderConfigChange,
		openfeature.ProviderStale, openfeature.ProviderError} {
		cb := func(d openfeature.EventDetails) {
			ev.mu.Lock()
			ev.got, ev.typ = append(ev.got, d), append(ev.typ, typ)
			ev.mu.Unlock()
			select {
			case ev.ch <- typ:
			default:
			}
		}
		api.AddHandler(typ, &cb)
	}
	ctx := context.Background()
	t.Cleanup(func() { _ = api.Shutdown(ctx) })
	err := api.SetProviderAndWait(ctx, p)
	return api.NewClient(), ev, err
}

// wait returns the details of the next event of type typ within d.
func (e *events) wait(t testing.TB, typ openfeature.EventType, d time.Duration) openfeature.EventDetails {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case got := <-e.ch:
			if got != typ {
				continue
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			for i := len(e.typ) - 1; i >= 0; i-- {
				if e.typ[i] == typ {
					return e.got[i]
				}
			}
		case <-deadline:
			t.Fatalf("no %s event within %s", typ, d)
		}
	}
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func evalCtx(service, dependency string) openfeature.EvaluationContext {
	attrs := map[string]any{}
	if service != "" {
		attrs[flags.AttrService] = service
	}
	if dependency != "" {
		attrs[flags.AttrDependency] = dependency
	}
	return openfeature.NewTargetlessEvaluationContext(attrs)
}
