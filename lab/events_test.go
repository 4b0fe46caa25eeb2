package lab

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/lever"
)

// rehearsal schedules, on payments-slow (fault 2m–5m): the breaker to
// payments forced open at 3m for one minute of simulated time, retries off
// at 5m30s, and their release at 6m30s.
const rehearsal = `
- {at: 3m, kind: breaker, target: checkout->payments, value: open, ttl: 1m}
- {at: 5m30s, kind: retries, target: checkout->payments, value: "off", reason: rehearse the retry lever}
- {at: 6m30s, kind: retries, target: checkout->payments}
`

// Scheduled events go through the control plane on both backends the lab
// runs on (a real redis-server, and the embedded server of a zero set-up
// lab): guards and journal, the fleet's provider, and the simulation. A
// lever lasts its TTL of simulated time in a max-speed run.
func TestEventsThroughControlPlane(t *testing.T) {
	backends := map[string]func(t *testing.T) string{
		"redis-server": newRedisAddr,
		"embedded": func(t *testing.T) string {
			e, err := StartEmbeddedRedis("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Close)
			return e.Addr
		},
	}
	for name, start := range backends {
		t.Run(name, func(t *testing.T) {
			evs, err := sim.ParseEvents("rehearsal.yaml", []byte(rehearsal))
			if err != nil {
				t.Fatal(err)
			}
			c := startControlLab(t, "payments-slow", start(t), evs)
			if err := c.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(c.Pulls) != 3 {
				t.Fatalf("%d pulls, want 3", len(c.Pulls))
			}
			for _, p := range c.Pulls {
				if p.Err != nil {
					t.Errorf("event at %s: %v", p.Event.At.D(), p.Err)
				}
			}
			// Breaker-refused calls while the lever held, none once it expired.
			for _, tc := range []struct {
				at   time.Duration
				open bool
			}{{3*time.Minute + 50*time.Second, true}, {4*time.Minute + 40*time.Second, false}} {
				n := c.instant(t, `sum(increase(stormctl_attempts_total{outcome="breaker_open"}[30s]))`, tc.at)
				if (n > 0) != tc.open {
					t.Errorf("breaker-refused attempts in the 30s before %s: %v, want open=%v", tc.at, n, tc.open)
				}
			}
			// Retries off from 5m30s to 6m30s: once the requests that started
			// before it made their last attempt (4 × 1s), no more retries.
			if n := c.instant(t, `sum(increase(stormctl_retries_total[45s]))`, 6*time.Minute+25*time.Second); n != 0 {
				t.Errorf("%v retries while retries were off", n)
			}
			for _, kind := range []lever.Kind{lever.Breaker, lever.Retries} {
				if v, ok := c.levers.served(context.Background(), kind, "checkout->payments"); ok {
					t.Errorf("the provider still serves %s version %d after expiry or release", kind, v)
				}
			}
			var got []journal.Event
			for e, err := range c.svc.Store.Journal(context.Background()) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Actor == "rehearsal" {
					got = append(got, e.Event)
				}
			}
			want := []journal.Event{journal.ActionApplied, journal.ActionApplied, journal.ActionReleased}
			if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
				t.Errorf("journal: %v, want %v", got, want)
			}
		})
	}
}

// instant evaluates expr at simulated time at with the embedded engine.
func (c *controlLab) instant(t *testing.T, expr string, at time.Duration) float64 {
	t.Helper()
	v, _, err := c.DB.Query(context.Background(), expr, c.Epoch.Add(at))
	if err != nil {
		t.Fatal(err)
	}
	vec, ok := v.(promql.Vector)
	if !ok || len(vec) != 1 {
		t.Fatalf("%s at %s: %v", expr, at, v)
	}
	return vec[0].F
}
