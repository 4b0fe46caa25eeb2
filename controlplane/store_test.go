package controlplane

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

func openStore(t testing.TB, r *testenv.Redis, user, pass string) *Store {
	t.Helper()
	s, err := Open(context.Background(), config.Redis{URL: r.URL(user, pass), Namespace: "t"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func retriesLever(target, value string, ttl time.Duration) lever.Lever {
	return lever.Lever{Kind: lever.Retries, Target: target, Value: value, Actor: "alice", Reason: "amplification 3.2", ExpiresAt: time.Now().Add(ttl)}
}

// apply reads the lever and applies l over whatever is there.
func apply(t *testing.T, s *Store, l lever.Lever) Result {
	t.Helper()
	cur, ver, head, err := s.Get(context.Background(), l.Kind, l.Target)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Apply(context.Background(), ApplyRequest{Lever: l, Expected: ver, Current: cur, Head: head})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// journalEntries reads and verifies the whole journal stream.
func journalEntries(t *testing.T, s *Store) []journal.Entry {
	t.Helper()
	ctx := context.Background()
	msgs, err := s.Client().XRange(ctx, s.Keys().Journal(), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	head, _ := s.Client().Get(ctx, s.Keys().JournalHead()).Result()
	prev := ""
	var out []journal.Entry
	for i, m := range msgs {
		e, err := journal.Parse([]byte(m.Values["entry"].(string)))
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if e.PrevHash != prev {
			t.Fatalf("entry %d (%s) links to %.8s, want %.8s", i, e.Event, e.PrevHash, prev)
		}
		prev = e.Hash
		out = append(out, e)
	}
	if prev != head {
		t.Fatalf("journal ends at %.8s, head is %.8s", prev, head)
	}
	return out
}

func events(es []journal.Entry) []journal.Event {
	var out []journal.Event
	for _, e := range es {
		out = append(out, e.Event)
	}
	return out
}

func TestApplyGetReleaseExtend(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, testenv.StartRedis(t, testenv.RedisOptions{}), "", "")
	changes, stop := s.Subscribe(ctx)
	defer stop()
	// Subscription is asynchronous: wait until the server counts it.
	for n := int64(0); n == 0; time.Sleep(5 * time.Millisecond) {
		n = s.Client().PubSubNumSub(ctx, s.Keys().Changes()).Val()[s.Keys().Changes()]
	}

	first := apply(t, s, retriesLever("checkout->payments", "off", time.Hour))
	if first.Version != 1 || first.Lever.Version != 1 || first.Entry.Event != journal.ActionApplied {
		t.Fatalf("first apply: %+v", first)
	}
	second := apply(t, s, retriesLever("checkout->payments", "cap:2", 30*time.Minute))
	if second.Lever.Previous == nil || second.Lever.Previous.Value != "off" {
		t.Fatalf("supersede did not keep the previous lever: %+v", second.Lever)
	}
	if second.Entry.Previous == nil || second.Entry.Previous.Value != "off" || second.Entry.New.Value != "cap:2" {
		t.Fatalf("journal states: %+v %+v", second.Entry.Previous, second.Entry.New)
	}

	cur, ver, _, err := s.Get(ctx, lever.Retries, "checkout->payments")
	if err != nil || ver != 2 || cur.Value != "cap:2" {
		t.Fatalf("get: %+v %d %v", cur, ver, err)
	}
	ttl := s.Client().PTTL(ctx, s.Keys().Lever(lever.Retries, "checkout->payments")).Val()
	if ttl <= 29*time.Minute || ttl > 30*time.Minute {
		t.Fatalf("lever key TTL %v, want about 30m", ttl)
	}

	newExp := time.Now().Add(45 * time.Minute)
	ext, err := s.Extend(ctx, ExtendRequest{Current: cur, ExpiresAt: newExp})
	if err != nil {
		t.Fatal(err)
	}
	if score := s.Client().ZScore(ctx, s.Keys().Index(), "retries:checkout->payments").Val(); int64(score) != newExp.UnixMilli() {
		t.Fatalf("index score %v, want %d", score, newExp.UnixMilli())
	}

	rel, err := s.Release(ctx, ReleaseRequest{Current: ext.Lever})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Lever == nil || rel.Lever.Value != "off" || rel.Lever.Version != 4 {
		t.Fatalf("release did not restore the previous lever: %+v", rel.Lever)
	}
	rel2, err := s.Release(ctx, ReleaseRequest{Current: rel.Lever})
	if err != nil || rel2.Lever != nil {
		t.Fatalf("second release: %+v %v", rel2, err)
	}
	if ls, err := s.Levers(ctx); err != nil || len(ls) != 0 {
		t.Fatalf("levers after release: %v %v", ls, err)
	}

	got := events(journalEntries(t, s))
	want := []journal.Event{journal.ActionApplied, journal.ActionApplied, journal.ActionExtended, journal.ActionReleased, journal.ActionReleased}
	if len(got) != len(want) {
		t.Fatalf("journal events %v, want %v", got, want)
	}
	var ops []lever.Op
	for range 5 {
		select {
		case c := <-changes:
			ops = append(ops, c.Op)
		case <-time.After(2 * time.Second):
			t.Fatalf("changes received: %v", ops)
		}
	}
	if ops[4] != lever.OpDel || ops[3] != lever.OpSet {
		t.Fatalf("change ops %v", ops)
	}
}

func TestConflictIsTypedAndJournaled(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, testenv.StartRedis(t, testenv.RedisOptions{}), "", "")
	cur, ver, head, _ := s.Get(ctx, lever.Breaker, "payments")
	bob := retriesLever("payments", "open", time.Hour)
	bob.Kind, bob.Actor, bob.Reason = lever.Breaker, "bob", "p99 above timeout"
	if _, err := s.Apply(ctx, ApplyRequest{Lever: bob, Expected: ver, Current: cur, Head: head}); err != nil {
		t.Fatal(err)
	}
	alice := retriesLever("payments", "open", time.Hour)
	alice.Kind = lever.Breaker
	_, err := s.Apply(ctx, ApplyRequest{Lever: alice, Expected: ver, Current: cur, Head: head})
	var ce *ConflictError
	if !errors.As(err, &ce) || exit.Code(err) != exit.Conflict {
		t.Fatalf("want *ConflictError exiting 6, got %v", err)
	}
	if ce.Holder == nil || ce.Holder.Actor != "bob" || ce.Actual != 1 || ce.Entry.Event != journal.ActionRefused {
		t.Fatalf("conflict: %+v", ce)
	}
	es := journalEntries(t, s)
	if last := es[len(es)-1]; last.Event != journal.ActionRefused || last.Actor != "alice" || last.Previous.Actor != "bob" {
		t.Fatalf("refusal entry: %+v", last)
	}
	if l, _, _, _ := s.Get(ctx, lever.Breaker, "payments"); l.Actor != "bob" {
		t.Fatalf("conflicting apply changed the lever: %+v", l)
	}
}

func TestIdempotencyKeyReturnsFirstResult(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, testenv.StartRedis(t, testenv.RedisOptions{}), "", "")
	req := ApplyRequest{Lever: retriesLever("checkout", "off", time.Hour), IdempotencyKey: "runbook-7-step-2", RequestHash: "sha256:first"}
	first, err := s.Apply(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Apply(ctx, req) // a retried step: the same request
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.Lever.ActionID != first.Lever.ActionID || again.Entry.Hash != first.Entry.Hash ||
		!again.Lever.ExpiresAt.Equal(first.Lever.ExpiresAt) || again.Version != first.Version {
		t.Fatalf("replay %+v, first %+v", again, first)
	}
	// The key reused for another request (another value): refused, exit 2,
	// and nothing of it done.
	req.Lever.Value, req.RequestHash = "cap:3", "sha256:other"
	_, err = s.Apply(ctx, req)
	var reused *KeyReusedError
	if !errors.As(err, &reused) || exit.Code(err) != exit.Usage || reused.First.Lever.ActionID != first.Lever.ActionID {
		t.Fatalf("reused key: %v (exit %d), want a *KeyReusedError naming the first action", err, exit.Code(err))
	}
	if n := len(journalEntries(t, s)); n != 1 {
		t.Fatalf("journal has %d entries, want 1", n)
	}
	if l, ver, _, _ := s.Get(ctx, lever.Retries, "checkout"); l.Value != "off" || ver != 1 {
		t.Fatalf("lever %+v version %d", l, ver)
	}
}

func TestExpiryIsAbsentAtOnceAndJournaledOnce(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	s := openStore(t, r, "", "")
	res := apply(t, s, retriesLever("search", "off", time.Second))
	expiry := res.Lever.ExpiresAt
	time.Sleep(time.Until(expiry) + 10*time.Millisecond)

	// A plain reader, as a flags provider would read, already sees nothing.
	raw := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer raw.Close()
	if n := raw.Exists(ctx, s.Keys().Lever(lever.Retries, "search")).Val(); n != 0 {
		t.Fatal("lever key still present after its expiry")
	}

	other := openStore(t, r, "", "")
	results := make(chan []journal.Entry, 2)
	for _, st := range []*Store{s, other} {
		go func() {
			es, err := st.Reap(ctx, time.Now())
			if err != nil {
				t.Error(err)
			}
			results <- es
		}()
	}
	total := len(<-results) + len(<-results)
	if total != 1 {
		t.Fatalf("two concurrent reapers journaled %d expiries, want 1", total)
	}
	if es, _ := s.Reap(ctx, time.Now()); len(es) != 0 {
		t.Fatalf("a later reap journaled %d more", len(es))
	}
	es := journalEntries(t, s)
	last := es[len(es)-1]
	if len(es) != 2 || last.Event != journal.ActionExpired || !last.Time.Equal(expiry) || last.ActionID != res.Lever.ActionID {
		t.Fatalf("journal %v; expiry entry %+v (want time %v)", events(es), last, expiry)
	}
}

func TestApplyAfterUnjournaledExpiryJournalsItFirst(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, testenv.StartRedis(t, testenv.RedisOptions{}), "", "")
	first := apply(t, s, retriesLever("search", "off", 300*time.Millisecond))
	time.Sleep(400 * time.Millisecond)
	// Apply with the state read before expiry: the script finds the
	// unjournaled expiry, which must be journaled before the new write.
	_, err := s.Apply(ctx, ApplyRequest{Lever: retriesLever("search", "cap:2", time.Hour), Expected: 1, Current: first.Lever, Head: first.Entry.Hash})
	if err != nil {
		t.Fatal(err)
	}
	got := events(journalEntries(t, s))
	if len(got) != 3 || got[1] != journal.ActionExpired || got[2] != journal.ActionApplied {
		t.Fatalf("journal %v", got)
	}
}

func TestReleaseOfExpiredLeverIsNotActive(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, testenv.StartRedis(t, testenv.RedisOptions{}), "", "")
	first := apply(t, s, retriesLever("search", "off", 200*time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	_, err := s.Release(ctx, ReleaseRequest{Current: first.Lever})
	var na *NotActiveError
	if !errors.As(err, &na) {
		t.Fatalf("want *NotActiveError, got %v", err)
	}
	got := events(journalEntries(t, s))
	if len(got) != 3 || got[1] != journal.ActionExpired || got[2] != journal.ActionRefused {
		t.Fatalf("journal %v", got)
	}
}
