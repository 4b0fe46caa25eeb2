package alerts

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/lever"
)

// A replica killed while acting on an event leaves its lease in Redis and
// nothing else. While the lease runs, a delivery of that event waits, then
// answers 503 (Alertmanager tries again) and acts on nothing; once it has
// run out, the next delivery acts on the event. Killing a real receiver
// process is cmd/stormctl's TestAlertsServeKilledMidEvent.
func (rg *rig) deadHolderLeaseRunsOut(t *testing.T) {
	const lease = 4 * time.Second
	s := rg.stack(t, t.Name(), stackOptions{allow: map[string][]string{"retries": {"checkout"}}, lease: lease})
	ctx := context.Background()
	m, err := Decode(fixture(t, nil), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	name := eventClaim(m.GroupKey, m.Alerts[0])
	claimed := time.Now()
	if ok, err := s.store.Claim(ctx, name, eventActing+"killed-replica", lease); !ok || err != nil {
		t.Fatalf("claim as the killed replica: %v %v", ok, err)
	}

	start := time.Now()
	if c := s.post(t, fixture(t, nil), testToken, nil); c != 503 {
		t.Fatalf("delivery while the lease runs: HTTP %d, want 503", c)
	}
	if waited := time.Since(start); waited < lease/4 || time.Since(claimed) >= lease {
		t.Errorf("answered 503 after %s (lease claimed %s before): want a wait of a quarter of the lease, inside it", waited, time.Since(claimed))
	}
	if got := s.metric(t, `stormctl_alerts_events_total{outcome="in_progress",status="firing"}`); got != "1" {
		t.Errorf("in_progress counted %s, want 1", got)
	}
	if es := s.entries(t); len(es) != 0 {
		t.Fatalf("a delivery refused while the lease ran wrote %d journal entries: %+v", len(es), es[0])
	}

	// Alertmanager keeps retrying; one of its retries lands after the lease.
	var code int
	waitFor(t, "a delivery acted on once the lease ran out", func() bool {
		code = s.post(t, fixture(t, nil), testToken, nil)
		return code == 200
	})
	if time.Since(claimed) < lease {
		t.Errorf("acted on %s after the killed replica's claim, inside its %s lease", time.Since(claimed), lease)
	}
	l, _, _, err := s.store.Get(ctx, lever.Retries, "checkout->payments")
	if err != nil || l == nil || l.Actor != Actor {
		t.Fatalf("lever %+v, %v: want the autopilot's", l, err)
	}
	if held, _ := s.store.Claimed(ctx, name); !strings.HasPrefix(held, eventDone) {
		t.Errorf("event claim %q after acting: want it recorded as done", held)
	}
	if n := countEvents(s.entries(t), AlertFired); n != 1 {
		t.Errorf("%d alert.fired entries, want 1", n)
	}
	if c := s.post(t, fixture(t, nil), testToken, nil); c != 200 {
		t.Errorf("delivery after the event was acted on: HTTP %d, want 200 (a duplicate)", c)
	}
	if n := countEvents(s.entries(t), AlertFired); n != 1 {
		t.Errorf("%d alert.fired entries after a duplicate, want 1", n)
	}
}

// A signed delivery answered 503 was not acted on, so the same signed
// request sent again (a proxy retrying on 5xx resends it byte for byte)
// acts once the event is free; once acted on, it is a replay.
func (rg *rig) signedRetryAfter503(t *testing.T) {
	const lease = 2 * time.Second
	key := []byte("webhook-hmac-key-0123456789abcdef")
	s := rg.stack(t, t.Name(), stackOptions{allow: map[string][]string{"retries": {"checkout"}}, hmacKey: string(key), lease: lease})
	ctx := context.Background()
	body := fixture(t, nil)
	m, err := Decode(body, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.store.Claim(ctx, eventClaim(m.GroupKey, m.Alerts[0]), eventActing+"killed-replica", lease); !ok || err != nil {
		t.Fatalf("claim as the killed replica: %v %v", ok, err)
	}
	signedAt := time.Now()
	if c := postSigned(t, s, body, key, signedAt); c != 503 {
		t.Fatalf("signed delivery while the lease runs: HTTP %d, want 503", c)
	}
	waitFor(t, "the same signed request acted on once the lease ran out", func() bool {
		c := postSigned(t, s, body, key, signedAt)
		if c != 200 && c != 503 {
			t.Fatalf("the same signed request after a 503: HTTP %d, want 503 or 200", c)
		}
		return c == 200
	})
	if n := countEvents(s.entries(t), AlertFired); n != 1 {
		t.Errorf("%d alert.fired entries, want 1", n)
	}
	if c := postSigned(t, s, body, key, signedAt); c != 409 {
		t.Errorf("the signed request once acted on: HTTP %d, want 409 (replayed)", c)
	}
}
