package controlplane

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// waitUntil polls cond for up to ten seconds.
func waitUntil(t testing.TB, what string, cond func() bool) {
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// TestClusterMode runs the control plane on a Redis Cluster of three
// masters (real processes), opened as a context does (a redis:// URL with
// ?cluster=true naming one node): apply, extend, the change feed, expiry
// for readers and its journaling, the replication status of the master
// that owns the namespace, the journal (append, read, verify, position)
// and the loss detector, and this machine's written record. Redis refuses
// a script whose keys hash to different slots, so this also proves the
// schema's one hash tag per namespace keeps every script on one master.
// The lab backends' tests (backends_test.go) run there too.
func TestClusterMode(t *testing.T) {
	ctx := context.Background()
	addrs := testenv.StartCluster(t, 3)
	s, err := Open(ctx, config.Redis{URL: "redis://" + addrs[0] + "?cluster=true", Namespace: "c"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.Client().(*redis.ClusterClient); !ok {
		t.Fatalf("client is %T, want a cluster client", s.Client())
	}
	written := filepath.Join(t.TempDir(), "written.jsonl")
	s.SetWritten(written)
	feed, stop := s.Subscribe(ctx)
	defer stop()

	short := apply(t, s, retriesLever("checkout", "off", 300*time.Millisecond))
	res := apply(t, s, retriesLever("search", "cap:2", time.Hour))
	if _, err := s.Extend(ctx, ExtendRequest{Current: res.Lever, ExpiresAt: time.Now().Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"checkout", "search", "search"} {
		select {
		case c := <-feed:
			if c.Target != want || c.Op != lever.OpSet {
				t.Fatalf("change %d: %+v, want a set of %s", i, c, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("change %d not published through the cluster", i)
		}
	}
	time.Sleep(time.Until(short.Lever.ExpiresAt))
	if l, _, _, err := s.Get(ctx, lever.Retries, "checkout"); err != nil || l != nil {
		t.Fatalf("at expiry: %v %v, want absent", l, err)
	}
	// Whoever notices first (this reader, or a reap) journals it, once.
	waitUntil(t, "the expiry was not journaled", func() bool {
		if _, err := s.Reap(ctx, time.Now()); err != nil {
			return false
		}
		for _, e := range journalEntries(t, s) {
			if e.Event == journal.ActionExpired && e.ActionID == short.Lever.ActionID {
				return true
			}
		}
		return false
	})
	rep, err := s.Replication(ctx)
	if err != nil || rep.Role != "master" || rep.Replicas != 0 {
		t.Fatalf("replication of the namespace's master: %+v %v", rep, err)
	}
	if _, err := s.Append(ctx, journal.Entry{Event: journal.Note, Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	if ls, err := s.Levers(ctx); err != nil || len(ls) != 1 {
		t.Fatalf("levers: %v %v", ls, err)
	}
	if n := verifyJournal(t, s); n != 5 {
		t.Fatalf("journal has %d entries, want 5", n)
	}

	// The loss detector and the written record work there too: a journal
	// cut back to its first two entries is reported, with the three
	// after them missing, and the lost writes are named for journal sync.
	d := NewLossDetector(s, filepath.Join(t.TempDir(), "mark.json"))
	pos, err := d.Check(ctx)
	if err != nil || pos != nil {
		t.Fatalf("before: %v %v", pos, err)
	}
	ids, err := s.Client().XRange(ctx, s.Keys().Journal(), "-", "+").Result()
	if err != nil || len(ids) != 5 {
		t.Fatalf("%v %d", err, len(ids))
	}
	for _, m := range ids[2:] {
		s.Client().XDel(ctx, s.Keys().Journal(), m.ID)
	}
	loss, err := d.Check(ctx)
	if err != nil || loss == nil || loss.Missing != 3 || loss.After != ids[1].ID || loss.Entry == "" {
		t.Fatalf("loss: %+v %v", loss, err)
	}
	lw, err := s.LostWrites(ctx, written)
	if err != nil || len(lw.Lost) != 1 || lw.Lost[0].Event != journal.ActionExtended || len(lw.Done) != 2 {
		t.Fatalf("lost writes: %+v %v", lw, err)
	}
}
