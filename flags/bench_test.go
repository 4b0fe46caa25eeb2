package flags_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/memprovider"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// fleet is n providers, each with its own Redis connections, reporting how
// long after t0 each one announced a change of the shed lever.
type fleet struct {
	providers []*flags.Provider
	clients   []*redis.Client
	t0        atomic.Int64 // UnixNano of the write being observed
	seen      chan time.Duration
}

func startFleet(b *testing.B, addr string, n int, opts ...flags.Option) *fleet {
	f := &fleet{seen: make(chan time.Duration, n)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg, inits sync.WaitGroup
	b.Cleanup(func() {
		cancel()
		for i, p := range f.providers {
			p.Shutdown()
			_ = f.clients[i].Close()
		}
		wg.Wait()
	})
	for i := range n {
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 2})
		p := flags.NewProvider(c, append(opts, flags.Heartbeat(10*time.Second))...)
		f.providers, f.clients = append(f.providers, p), append(f.clients, c)
		inits.Go(func() {
			if err := p.Init(openfeature.EvaluationContext{}); err != nil {
				b.Errorf("provider %d: %v", i, err)
			}
		})
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case ev := <-p.EventChannel():
					if ev.EventType == openfeature.ProviderConfigChange && slices.Contains(ev.FlagChanges, flags.ShedPercent) {
						f.seen <- time.Since(time.Unix(0, f.t0.Load()))
					}
				}
			}
		})
	}
	inits.Wait()
	return f
}

// collect waits for one observation per provider.
func (f *fleet) collect(b *testing.B, into *[]time.Duration, timeout time.Duration) {
	deadline := time.After(timeout)
	for range f.providers {
		select {
		case d := <-f.seen:
			*into = append(*into, d)
		case <-deadline:
			b.Fatalf("only %d providers observed the change within %s", len(*into)%len(f.providers), timeout)
		}
	}
}

func percentile(sorted []time.Duration, q float64) float64 {
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return float64(sorted[i].Microseconds()) / 1000
}

// BenchmarkPropagation applies a lever and measures until each of 200
// providers (push) observes it, against 200 providers that poll every second.
func BenchmarkPropagation(b *testing.B) {
	const n = 200
	srv, _, w := newRedis(b, testenv.RedisOptions{})
	push := startFleet(b, srv.Addr, n, flags.ResyncInterval(time.Hour))
	poll := startFleet(b, srv.Addr, n, flags.ResyncInterval(time.Second), flags.WithoutPush())
	var pushed, polled []time.Duration
	round := 0
	for b.Loop() {
		round++
		now := time.Now().UnixNano()
		push.t0.Store(now)
		poll.t0.Store(now)
		w.set(b, lever.Shed, "checkout", fmt.Sprint(round%100+1), time.Hour, true)
		push.collect(b, &pushed, 10*time.Second)
		poll.collect(b, &polled, 10*time.Second)
	}
	slices.Sort(pushed)
	slices.Sort(polled)
	b.ReportMetric(percentile(pushed, 0.50), "p50-ms")
	b.ReportMetric(percentile(pushed, 0.99), "p99-ms")
	b.ReportMetric(percentile(pushed, 1), "max-ms")
	b.ReportMetric(percentile(polled, 0.99), "poll-p99-ms")
	b.ReportMetric(percentile(polled, 0.99)/percentile(pushed, 0.99), "poll/push-p99-x")
}

// BenchmarkEvaluate measures one evaluation from the snapshot, directly and
// through the SDK client, against the SDK's in-memory provider as baseline.
func BenchmarkEvaluate(b *testing.B) {
	_, rc, w := newRedis(b, testenv.RedisOptions{})
	w.set(b, lever.Retries, "checkout", "cap:3", time.Hour, true)
	w.set(b, lever.Breaker, "payments", "open", time.Hour, true)
	p := flags.NewProvider(rc, flags.ResyncInterval(time.Hour))
	client, _ := sdk(b, p)
	ctx, ec := context.Background(), evalCtx("checkout", "payments")
	flat := openfeature.FlattenedContext{flags.AttrService: "checkout", flags.AttrDependency: "payments"}

	b.Run("provider/match", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if p.IntEvaluation(ctx, flags.RetriesMaxAttempts, 5, flat).Value != 3 {
				b.Fatal("wrong value")
			}
		}
	})
	b.Run("provider/absent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if p.BooleanEvaluation(ctx, flags.AutoscalingFrozen, true, flat).Value {
				b.Fatal("wrong value")
			}
		}
	})
	b.Run("client/match", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if client.Int(ctx, flags.RetriesMaxAttempts, 5, ec) != 3 {
				b.Fatal("wrong value")
			}
		}
	})
	b.Run("client/memprovider-baseline", func(b *testing.B) {
		mem := memprovider.NewInMemoryProvider(map[string]memprovider.InMemoryFlag{
			flags.RetriesMaxAttempts: {Key: flags.RetriesMaxAttempts, State: memprovider.Enabled,
				DefaultVariant: "cap", Variants: map[string]any{"cap": int64(3)}},
		})
		c, _ := sdk(b, mem)
		b.ReportAllocs()
		for b.Loop() {
			if c.Int(ctx, flags.RetriesMaxAttempts, 5, ec) != 3 {
				b.Fatal("wrong value")
			}
		}
	})
}
