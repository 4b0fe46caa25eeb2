package alerts

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/playbooks"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/lever"
)

// BenchmarkWebhookToLever measures a webhook received over HTTP to the
// autopilot's lever applied, every guard included, on a real Redis; the
// evidence comes from a real Prometheus on loopback. Each iteration is a
// new event and a new incident (the last one closed, its lever released,
// outside the timing), so nothing is replayed.
func BenchmarkWebhookToLever(b *testing.B) { benchWebhookToLever(b, nil) }

// BenchmarkWebhookToLeverNotified is BenchmarkWebhookToLever with a
// notification webhook: the notices of the alert and the lever are queued
// before the webhook is answered.
func BenchmarkWebhookToLeverNotified(b *testing.B) { benchWebhookToLever(b, newHooks(b)) }

func benchWebhookToLever(b *testing.B, h *hooks) {
	rg := newRig(b, testenvOptions())
	pol := config.Policy{RateLimit: config.RateLimit{Window: config.Duration(time.Minute), PerActor: 1 << 20, Overall: 1 << 20}}
	s := rg.stack(b, "bench", stackOptions{allow: map[string][]string{"retries": {"checkout"}}, policy: pol, hooks: h})
	ctx := context.Background()
	prom := &promTime{}
	s.svc.Evidence = timedEvidence{s.svc.Evidence, prom}
	s.pilot.Measurer = timedMeasurer{s.pilot.Measurer, prom}
	lat := make([]time.Duration, 0, b.N)
	own := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		prom.d.Store(0)
		b.StopTimer()
		body := fixture(b, func(m *Message) { m.Alerts[0].StartsAt = fixtureStart.Add(time.Duration(i+1) * time.Millisecond) })
		b.StartTimer()
		start := time.Now()
		if c := s.post(b, body, testToken, nil); c != 200 {
			b.Fatalf("HTTP %d", c)
		}
		took := time.Since(start)
		lat = append(lat, took)
		own = append(own, took-time.Duration(prom.d.Load()))
		b.StopTimer()
		l, _, _, err := s.store.Get(ctx, lever.Retries, "checkout->payments")
		if err != nil || l == nil {
			b.Fatalf("no lever after iteration %d: %v", i, err)
		}
		if _, err := s.svc.Release(ctx, l.ActionID, "bench", "next iteration"); err != nil {
			b.Fatal(err)
		}
		if _, err := s.svc.CloseIncident(ctx, "", "bench", ""); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	slices.Sort(lat)
	slices.Sort(own)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(own[len(own)/2].Microseconds())/1000, "p50-ms-excl-prom")
	b.ReportMetric(float64(own[len(own)*99/100].Microseconds())/1000, "p99-ms-excl-prom")
}

// promTime adds up the time spent waiting for Prometheus (the evidence
// guard's and the playbook's checks) in one iteration.
type promTime struct{ d atomic.Int64 }

func (p *promTime) since(start time.Time) { p.d.Add(int64(time.Since(start))) }

type timedEvidence struct {
	actions.Evidence
	t *promTime
}

func (e timedEvidence) Measure(ctx context.Context, id string, tg actions.Target) (journal.Evidence, error) {
	defer e.t.since(time.Now())
	return e.Evidence.Measure(ctx, id, tg)
}

type timedMeasurer struct {
	playbooks.Measurer
	t *promTime
}

func (m timedMeasurer) Measure(ctx context.Context, r playbooks.MeasureRequest) (playbooks.Measurement, error) {
	defer m.t.since(time.Now())
	return m.Measurer.Measure(ctx, r)
}

// BenchmarkOpenGroupMemory reports what one open alert group costs: the
// receiver's Go heap (it keeps no group in memory: all is in Redis) and the
// Redis bytes of its claims (group → incident, one per event).
func BenchmarkOpenGroupMemory(b *testing.B) {
	rg := newRig(b, testenvOptions())
	s := rg.stack(b, "mem", stackOptions{})
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	groups := 0
	for b.Loop() {
		body := fixture(b, retarget("checkout", fmt.Sprintf("dep-%d", groups)))
		if c := s.post(b, body, testToken, nil); c != 200 {
			b.Fatalf("HTTP %d", c)
		}
		groups++
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(groups), "heap-B/group")
	var redisBytes int64
	for _, pattern := range []string{"*claim:alert-group:*", "*claim:alert-event:*"} {
		iter := s.store.Client().Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			n, err := s.store.Client().MemoryUsage(ctx, iter.Val()).Result()
			if err != nil {
				b.Fatal(err)
			}
			redisBytes += n
		}
	}
	b.ReportMetric(float64(redisBytes)/float64(groups), "redis-B/group")
}
