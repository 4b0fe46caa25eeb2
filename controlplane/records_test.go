package controlplane

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

func newRecordsStore(t *testing.T, ns string) *Store {
	t.Helper()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	s, err := Open(context.Background(), config.Redis{URL: r.URL("", ""), Namespace: ns}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func streamLen(t *testing.T, s *Store) int64 {
	t.Helper()
	n, err := s.Client().XLen(context.Background(), s.Keys().Journal()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSwapRecord(t *testing.T) {
	ctx := context.Background()
	s := newRecordsStore(t, "rec")
	e := journal.Entry{Event: journal.IncidentOpened, Actor: "alice", Incident: "I1", Reason: "checkout storm"}
	sealed, err := s.SwapRecord(ctx, "incidents", "I1", "", `{"open":true}`, e)
	if err != nil {
		t.Fatal(err)
	}
	if sealed.Hash == "" || sealed.RedisUser != "default" {
		t.Fatalf("entry not sealed and stamped: %+v", sealed)
	}
	// Creating it again finds it changed; nothing is journaled.
	_, err = s.SwapRecord(ctx, "incidents", "I1", "", `{"open":true}`, e)
	var ce *RecordChangedError
	if !errors.As(err, &ce) || ce.Current != `{"open":true}` || exit.Code(err) != exit.Conflict {
		t.Fatalf("second create: %v", err)
	}
	if n := streamLen(t, s); n != 1 {
		t.Fatalf("journal has %d entries, want 1", n)
	}
	// A swap from the value read succeeds; from a stale one it does not.
	e.Event = journal.IncidentClosed
	if _, err := s.SwapRecord(ctx, "incidents", "I1", `{"open":true}`, `{"open":false}`, e); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SwapRecord(ctx, "incidents", "I1", `{"open":true}`, `{"open":false}`, e); !errors.As(err, &ce) {
		t.Fatalf("stale swap: %v", err)
	}
	all, err := s.Records(ctx, "incidents")
	if err != nil || len(all) != 1 || all["I1"] != `{"open":false}` {
		t.Fatalf("records: %v %v", all, err)
	}
	if v, err := s.Record(ctx, "incidents", "nope"); v != "" || err != nil {
		t.Fatalf("absent record: %q %v", v, err)
	}
	if n := streamLen(t, s); n != 2 {
		t.Fatalf("journal has %d entries, want 2", n)
	}
}

func TestRate(t *testing.T) {
	ctx := context.Background()
	s := newRecordsStore(t, "rate")
	l := RateLimit{Window: 400 * time.Millisecond, PerActor: 2, Overall: 3}
	for i := 1; i <= 2; i++ {
		st, err := s.Rate(ctx, "alice", l, true)
		if err != nil || st.Limited != "" || st.Actor != i {
			t.Fatalf("take %d: %+v %v", i, st, err)
		}
	}
	st, err := s.Rate(ctx, "alice", l, true)
	if err != nil || st.Limited != "actor" || st.ResetIn <= 0 || st.Actor != 2 {
		t.Fatalf("third take by alice: %+v %v", st, err)
	}
	if st, _ := s.Rate(ctx, "bob", l, false); st.Limited != "" || st.Overall != 2 {
		t.Fatalf("a peek must not count: %+v", st)
	}
	if st, _ := s.Rate(ctx, "bob", l, true); st.Limited != "" || st.Overall != 3 {
		t.Fatalf("bob: %+v", st)
	}
	if st, _ := s.Rate(ctx, "carol", l, true); st.Limited != "overall" {
		t.Fatalf("carol must hit the overall budget: %+v", st)
	}
	time.Sleep(450 * time.Millisecond)
	if st, _ := s.Rate(ctx, "alice", l, true); st.Limited != "" || st.Actor != 1 {
		t.Fatalf("after the window: %+v", st)
	}
}

func TestReplay(t *testing.T) {
	ctx := context.Background()
	s := newRecordsStore(t, "replay")
	if r, err := s.Replay(ctx, "k1"); r != nil || err != nil {
		t.Fatalf("unknown key: %v %v", r, err)
	}
	l := lever.Lever{Kind: lever.Retries, Target: "checkout", Value: "off", Actor: "alice", Reason: "r", ExpiresAt: time.Now().Add(time.Minute)}
	first, err := s.Apply(ctx, ApplyRequest{Lever: l, IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Replay(ctx, "k1")
	if err != nil || r == nil || !r.Replayed || r.Lever.ActionID != first.Lever.ActionID || r.Entry.ID != first.Entry.ID {
		t.Fatalf("replay: %+v %v", r, err)
	}
}
