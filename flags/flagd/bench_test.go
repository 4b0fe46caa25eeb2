package flagd_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	syncv1 "buf.build/gen/go/open-feature/flagd/protocolbuffers/go/flagd/sync/v1"
	"connectrpc.com/connect"
	gofd "github.com/open-feature/go-sdk-contrib/providers/flagd/pkg"
	"github.com/open-feature/go-sdk/openfeature"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// observer is a fleet of providers reporting how long after t0 each one
// announced a change of the shed flag.
type observer struct {
	n    int
	t0   atomic.Int64
	seen chan time.Duration
}

func (o *observer) watch(ctx context.Context, events <-chan openfeature.Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			if t0 := o.t0.Load(); t0 != 0 && ev.EventType == openfeature.ProviderConfigChange && slices.Contains(ev.FlagChanges, lever.ShedPercent) {
				o.seen <- time.Since(time.Unix(0, o.t0.Load()))
			}
		}
	}
}

func (o *observer) collect(b *testing.B, into *[]time.Duration) {
	deadline := time.After(20 * time.Second)
	for i := range o.n {
		select {
		case d := <-o.seen:
			*into = append(*into, d)
		case <-deadline:
			b.Fatalf("only %d of %d providers observed the change", i, o.n)
		}
	}
}

// BenchmarkPropagation: a lever write until each of n official Go flagd
// providers (in-process, through stormctl flagd serve) announces it, in the
// same run as n of stormctl's native Redis providers; publish-ms is until
// the server has published the new snapshot. All the clients share this
// process's two cores, so at 200 the figures are mostly client CPU.
func BenchmarkPropagation(b *testing.B) {
	for _, n := range []int{20, 200} {
		b.Run(fmt.Sprint("clients=", n), func(b *testing.B) { propagation(b, n) })
	}
}

func propagation(b *testing.B, n int) {
	e := startEnv(b, flagd.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() { cancel(); wg.Wait() })
	native, viaFlagd := &observer{n: n, seen: make(chan time.Duration, n)}, &observer{n: n, seen: make(chan time.Duration, n)}
	for i := range n {
		c := redis.NewClient(&redis.Options{Addr: e.redis.Addr, PoolSize: 2})
		p := flags.NewProvider(c, flags.ResyncInterval(time.Hour), flags.Heartbeat(10*time.Second), flags.InstanceID(fmt.Sprint("native-", i)))
		if err := p.Init(openfeature.EvaluationContext{}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Shutdown(); _ = c.Close() })
		wg.Go(func() { native.watch(ctx, p.EventChannel()) })

		fp, err := gofd.NewProvider(gofd.WithInProcessResolver(), gofd.WithHost("127.0.0.1"), gofd.WithPort(port(b, e.srv.Addr("sync"))))
		if err != nil {
			b.Fatal(err)
		}
		if err := fp.Init(openfeature.EvaluationContext{}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(fp.Shutdown)
		wg.Go(func() { viaFlagd.watch(ctx, fp.EventChannel()) })
	}
	pub, done, err := e.srv.Hub().Subscribe("bench", "bench", true)
	if err != nil {
		b.Fatal(err)
	}
	defer done()
	// The in-process providers announce their first snapshot as a change:
	// let those pass before measuring.
	time.Sleep(time.Second)
	for _, o := range []*observer{native, viaFlagd} {
		for len(o.seen) > 0 {
			<-o.seen
		}
	}
	var nat, fd, published []time.Duration
	round := 0
	for b.Loop() {
		round++
		for len(pub.Wake()) > 0 {
			<-pub.Wake()
		}
		start := time.Now()
		native.t0.Store(start.UnixNano())
		viaFlagd.t0.Store(start.UnixNano())
		e.w.set(b, lever.Shed, "checkout", fmt.Sprint(round%100+1), time.Hour)
		<-pub.Wake()
		published = append(published, time.Since(start))
		native.collect(b, &nat)
		viaFlagd.collect(b, &fd)
	}
	slices.Sort(nat)
	slices.Sort(fd)
	slices.Sort(published)
	b.ReportMetric(testenv.PercentileMs(published, 0.50), "publish-p50-ms")
	b.ReportMetric(testenv.PercentileMs(fd, 0.50), "flagd-p50-ms")
	b.ReportMetric(testenv.PercentileMs(fd, 0.99), "flagd-p99-ms")
	b.ReportMetric(testenv.PercentileMs(nat, 0.50), "native-p50-ms")
	b.ReportMetric(testenv.PercentileMs(nat, 0.99), "native-p99-ms")
	b.ReportMetric(testenv.PercentileMs(fd, 0.99)/testenv.PercentileMs(nat, 0.99), "flagd/native-p99-x")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkThousandStreams: memory per connected sync stream and CPU per
// push with 1,000 streams open (server and clients share this process, so
// both figures include the client side), against one stream as baseline.
func BenchmarkThousandStreams(b *testing.B) {
	for _, streams := range []int{1, 1000} {
		b.Run(fmt.Sprint(streams), func(b *testing.B) {
			e := startEnv(b, flagd.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			b.Cleanup(func() { cancel(); wg.Wait() })
			var got atomic.Int64
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			client := syncClient(e.srv.Addr("sync"))
			for range streams {
				wg.Go(func() {
					st, err := client.SyncFlags(ctx, connect.NewRequest(&syncv1.SyncFlagsRequest{}))
					if err != nil {
						return
					}
					for st.Receive() {
						got.Add(1)
					}
				})
			}
			eventually(b, 30*time.Second, "every stream's first snapshot", func() bool { return got.Load() >= int64(streams) })
			runtime.GC()
			runtime.ReadMemStats(&after)
			heap := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / float64(streams) / 1024
			cpu0, round := cpuTime(), 0
			for b.Loop() {
				round++
				want := got.Load() + int64(streams)
				e.w.set(b, lever.Shed, "checkout", fmt.Sprint(round%100+1), time.Hour)
				eventually(b, 30*time.Second, "every stream's push", func() bool { return got.Load() >= want })
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(round), "cpu-ms/push")
			b.ReportMetric(heap, "heap-KiB/stream") // after b.Loop, which resets metrics reported before it
		})
	}
}
