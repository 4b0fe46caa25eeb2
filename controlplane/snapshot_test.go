package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

func TestSnapshotReadsEverythingInOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, testenv.StartRedis(t, testenv.RedisOptions{}), "", "")
	held := apply(t, s, retriesLever("checkout", "off", time.Hour))
	if _, err := s.Apply(ctx, ApplyRequest{Lever: retriesLever("search", "cap:2", time.Hour), IdempotencyKey: "k1"}); err != nil {
		t.Fatal(err)
	}
	lim := RateLimit{Window: time.Minute, PerActor: 1, Overall: 10}
	if _, err := s.Rate(ctx, "alice", lim, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SwapRecord(ctx, "incidents", "I1", "", `{"id":"I1"}`, journal.Entry{Event: journal.IncidentOpened, Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	head, _ := s.Client().Get(ctx, s.Keys().JournalHead()).Result()

	rt := &testenv.RoundTrips{}
	s.Client().AddHook(rt)
	snap, err := s.Snapshot(ctx, SnapshotRequest{
		Kind: lever.Retries, Targets: []string{"checkout", "search", "ledger"},
		Rate:            &RateCharge{Actor: "alice", Limit: lim},
		IdempotencyKeys: []string{"k1", "", "k2"},
		Records:         []RecordRef{{Collection: "incidents"}, {Collection: "incidents", ID: "I1"}, {Collection: "incidents", ID: "I9"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if trips := rt.Take(); len(trips) != 1 {
		t.Fatalf("%d round trips, want 1: %v", len(trips), trips)
	}
	if lr := snap.Levers["checkout"]; lr.Version != 1 || lr.Lever == nil || lr.Lever.ActionID != held.Lever.ActionID {
		t.Fatalf("checkout: %+v", lr)
	}
	if lr := snap.Levers["ledger"]; lr.Version != 0 || lr.Lever != nil {
		t.Fatalf("an absent lever: %+v", lr)
	}
	if snap.Head != head {
		t.Fatalf("head %.8s, want %.8s", snap.Head, head)
	}
	if st := snap.Rate; st.Limited != "actor" || st.Actor != 1 || st.Overall != 1 || st.ResetIn <= 0 || st.ResetIn > time.Minute {
		t.Fatalf("rate: %+v", st)
	}
	if r := snap.Replays["k1"]; len(snap.Replays) != 1 || r == nil || !r.Replayed || r.Lever.Target != "search" {
		t.Fatalf("replays: %+v", snap.Replays)
	}
	if len(snap.Records) != 3 || snap.Records[0]["I1"] == "" || snap.Records[1]["I1"] != `{"id":"I1"}` || len(snap.Records[2]) != 0 {
		t.Fatalf("records: %v", snap.Records)
	}
	if _, err := s.Snapshot(ctx, SnapshotRequest{Rate: &RateCharge{Actor: "a"}}); exit.Code(err) != exit.Usage {
		t.Fatalf("a rate limit without a window: %v", err)
	}
}

func TestSnapshotReapsAnExpiredLeverFirst(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, testenv.StartRedis(t, testenv.RedisOptions{}), "", "")
	apply(t, s, retriesLever("checkout", "off", 100*time.Millisecond))
	time.Sleep(200 * time.Millisecond)
	snap, err := s.Snapshot(ctx, SnapshotRequest{Kind: lever.Retries, Targets: []string{"checkout"}})
	if err != nil {
		t.Fatal(err)
	}
	es := journalEntries(t, s)
	if lr := snap.Levers["checkout"]; lr.Lever != nil || lr.Version != 1 || es[len(es)-1].Event != journal.ActionExpired || snap.Head != es[len(es)-1].Hash {
		t.Fatalf("after expiry: %+v, journal %v, head %.8s", lr, events(es), snap.Head)
	}
}

// The apply script spends the rate budget with its write, or refuses and
// changes nothing: no lever, no version, no journal entry, no count.
func TestApplyChargesTheRateLimitAtomically(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, testenv.StartRedis(t, testenv.RedisOptions{}), "", "")
	charge := &RateCharge{Actor: "alice", Limit: RateLimit{Window: time.Minute, PerActor: 1, Overall: 5}}
	if _, err := s.Apply(ctx, ApplyRequest{Lever: retriesLever("checkout", "off", time.Hour), Rate: charge}); err != nil {
		t.Fatal(err)
	}
	// A conflict is refused before the budget is looked at, and costs none.
	_, err := s.Apply(ctx, ApplyRequest{Lever: retriesLever("checkout", "cap:2", time.Hour), Rate: charge})
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("want a conflict first, got %v", err)
	}
	n := len(journalEntries(t, s))
	_, err = s.Apply(ctx, ApplyRequest{Lever: retriesLever("search", "off", time.Hour), Rate: charge})
	var rl *RateLimitedError
	if !errors.As(err, &rl) || rl.Status.Limited != "actor" || rl.Status.Actor != 1 || rl.Status.ResetIn <= 0 || exit.Code(err) != exit.Refused {
		t.Fatalf("want a *RateLimitedError for alice, got %v", err)
	}
	if !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("message: %v", err)
	}
	if l, ver, _, _ := s.Get(ctx, lever.Retries, "search"); l != nil || ver != 0 || len(journalEntries(t, s)) != n {
		t.Fatalf("a refused apply wrote: %+v v%d", l, ver)
	}
	if st, _ := s.Rate(ctx, "bob", charge.Limit, false); st.Overall != 1 {
		t.Fatalf("counted %d changes, want 1", st.Overall)
	}
	// Without a charge (a release, an extend, a bare apply) nothing is counted.
	if _, err := s.Apply(ctx, ApplyRequest{Lever: retriesLever("search", "off", time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Rate(ctx, "bob", charge.Limit, false); st.Overall != 1 {
		t.Fatalf("an uncharged apply counted: %+v", st)
	}
	bad := &RateCharge{Actor: "alice"}
	if _, err := s.Apply(ctx, ApplyRequest{Lever: retriesLever("x", "off", time.Hour), Rate: bad}); exit.Code(err) != exit.Usage {
		t.Fatalf("a charge without a window: %v", err)
	}
}

// The responder's ACL covers the charged apply script; the viewer may
// take a snapshot, which only reads.
func TestChargedApplyAndSnapshotUnderACL(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{ACL: []string{"default off",
		aclUser("r", "r-pw", Responder), aclUser("v", "v-pw", Viewer)}})
	charge := &RateCharge{Actor: "a", Limit: RateLimit{Window: time.Minute, PerActor: 5, Overall: 5}}
	responder, viewer := openStore(t, r, "r", "r-pw"), openStore(t, r, "v", "v-pw")
	if _, err := responder.Apply(ctx, ApplyRequest{Lever: retriesLever("checkout", "off", time.Hour), Rate: charge}); err != nil {
		t.Fatalf("responder: %v", err)
	}
	snap, err := viewer.Snapshot(ctx, SnapshotRequest{Kind: lever.Retries, Targets: []string{"checkout"}, Rate: charge,
		IdempotencyKeys: []string{"k"}, Records: []RecordRef{{Collection: "incidents"}}})
	if err != nil || snap.Levers["checkout"].Version != 1 || snap.Rate.Actor != 1 {
		t.Fatalf("viewer snapshot: %+v %v", snap, err)
	}
	_, err = viewer.Apply(ctx, ApplyRequest{Lever: retriesLever("search", "off", time.Hour), Rate: charge})
	var pe *PermissionError
	if !errors.As(err, &pe) {
		t.Fatalf("viewer apply: want NOPERM, got %v", err)
	}
}

// The embedded server (gopher-lua) runs the charged script and the
// snapshot pipeline too.
func TestChargedApplyOnTheEmbeddedServer(t *testing.T) {
	ctx := context.Background()
	_, s := embeddedStore(t)
	charge := &RateCharge{Actor: "a", Limit: RateLimit{Window: time.Minute, PerActor: 1, Overall: 5}}
	if _, err := s.Apply(ctx, ApplyRequest{Lever: retriesLever("checkout", "off", time.Hour), Rate: charge}); err != nil {
		t.Fatal(err)
	}
	var rl *RateLimitedError
	if _, err := s.Apply(ctx, ApplyRequest{Lever: retriesLever("search", "off", time.Hour), Rate: charge}); !errors.As(err, &rl) {
		t.Fatalf("second charged apply: %v", err)
	}
	snap, err := s.Snapshot(ctx, SnapshotRequest{Kind: lever.Retries, Targets: []string{"checkout", "search"}, Rate: charge})
	if err != nil || snap.Levers["checkout"].Lever == nil || snap.Levers["search"].Lever != nil || snap.Rate.Limited != "actor" {
		t.Fatalf("snapshot: %+v %v", snap, err)
	}
}
