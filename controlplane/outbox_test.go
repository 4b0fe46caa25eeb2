package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/testenv"
)

// The outbox under the automation role bound to its actor, as `alerts
// serve` runs: a notice goes to one sender; another takes it over only
// once the first's lease on it ran out, after which the first's renewal
// fails; sent notices leave the stream; a sender that leaves cleanly
// leaves no name behind; a full outbox refuses, keeping what it holds.
func TestOutbox(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{ACL: []string{"default off",
		strings.TrimPrefix(strings.Join(ACLArgs("pilot", Automation, NewKeys("t"), "automation", ">p-pw"), " "), "ACL SETUSER ")}})
	s := openStore(t, r, "pilot", "p-pw")
	const lease = 2 * time.Second
	a, b := s.Outbox(lease), s.Outbox(lease)
	if a.Consumer() == b.Consumer() {
		t.Fatalf("two senders share the name %q", a.Consumer())
	}
	if err := a.Add(ctx, "k1", []byte(`{"event":"alert.fired"}`)); err != nil {
		t.Fatal(err)
	}
	got, lost, err := a.Next(ctx, 16, 100*time.Millisecond)
	if err != nil || lost != 0 || len(got) != 1 || got[0].Key != "k1" || string(got[0].Payload) != `{"event":"alert.fired"}` {
		t.Fatalf("a's next: %+v lost %d, %v", got, lost, err)
	}
	id := got[0].ID
	// Within a's lease b gets nothing, and a's renewals keep it so.
	for range 3 {
		if ok, err := a.Renew(ctx, id); !ok || err != nil {
			t.Fatalf("a's renew: %v %v", ok, err)
		}
		if other, _, err := b.Next(ctx, 16, 100*time.Millisecond); err != nil || len(other) != 0 {
			t.Fatalf("b took %+v (%v) within a's lease", other, err)
		}
		time.Sleep(lease / 4)
	}
	// a falls silent: after its lease b takes the notice over.
	var taken []OutboxEntry
	deadline := time.Now().Add(10 * lease)
	for len(taken) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("b never took over the notice a fell silent on")
		}
		if taken, _, err = b.Next(ctx, 16, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if taken[0].ID != id || taken[0].Key != "k1" {
		t.Fatalf("b took %+v, want %s", taken, id)
	}
	if ok, err := a.Renew(ctx, id); ok || err != nil {
		t.Fatalf("a renewed a notice b took over: %v %v", ok, err)
	}
	if err := b.Done(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n := s.client.XLen(ctx, s.keys.Notices()).Val(); n != 0 {
		t.Fatalf("%d notices left after done", n)
	}
	if got, _, err := a.Next(ctx, 16, 100*time.Millisecond); err != nil || len(got) != 0 {
		t.Fatalf("a's next after done: %+v %v", got, err)
	}
	for _, o := range []*Outbox{a, b} {
		if err := o.Leave(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if cs := s.client.XInfoConsumers(ctx, s.keys.Notices(), outboxGroup).Val(); len(cs) != 0 {
		t.Fatalf("senders left behind: %+v", cs)
	}

	// Full: the next notice is refused, none of those queued is trimmed.
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for range OutboxMaxLen {
			p.XAdd(ctx, &redis.XAddArgs{Stream: s.keys.Notices(), Values: []any{"key", "fill", "payload", "{}"}})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Add(ctx, "k2", []byte(`{}`)); !errors.Is(err, ErrOutboxFull) {
		t.Fatalf("add to a full outbox: %v", err)
	}
	if n := s.client.XLen(ctx, s.keys.Notices()).Val(); n != OutboxMaxLen {
		t.Fatalf("%d notices after a refused add, want %d", n, OutboxMaxLen)
	}

	// Redis lost the group (a restart without persistence): the next
	// read after the one that failed creates it again.
	if err := s.client.Del(ctx, s.keys.Notices()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.Add(ctx, "k3", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	var after []OutboxEntry
	for range 2 {
		if after, _, err = a.Next(ctx, 16, 100*time.Millisecond); err == nil {
			break
		}
	}
	if err != nil || len(after) != 1 || after[0].Key != "k3" {
		t.Fatalf("next after the group was lost: %+v %v", after, err)
	}
}
