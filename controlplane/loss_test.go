package controlplane

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

// TestFailoverLossDetected: the replica falls behind (paused, its link
// dropped), a burst of applies is reported unreplicated, the primary is
// killed and Sentinel promotes the replica. Every acknowledged apply is
// either present after the promotion or was reported unreplicated; a
// running detector reports the loss within seconds and journals one
// controlplane.lost entry naming the range.
func TestFailoverLossDetected(t *testing.T) {
	ctx := context.Background()
	primary, replica := testenv.StartReplicated(t)
	sentinel := testenv.StartSentinel(t, primary.Addr, true)
	s, err := Open(ctx, config.Redis{URL: sentinel.URL(), Namespace: "f", WaitTimeout: config.Duration(2 * time.Second)},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	markPath, writtenPath := filepath.Join(t.TempDir(), "mark.json"), filepath.Join(t.TempDir(), "written.jsonl")
	s.SetWritten(writtenPath)
	d := NewLossDetector(s, markPath)

	confirmed := map[string]bool{}
	for i := range 3 {
		res := apply(t, s, retriesLever("svc-"+strconv.Itoa(i), "off", time.Hour))
		if !res.Replication.Replicated {
			t.Fatalf("healthy replica: %+v", res.Replication)
		}
		confirmed[res.Entry.ID] = true
	}
	replica.Pause()
	direct := redis.NewClient(&redis.Options{Addr: primary.Addr})
	defer direct.Close()
	direct.ClientKillByFilter(ctx, "TYPE", "replica")
	var unconfirmed []string
	for i := 3; i < 7; i++ {
		res := apply(t, s, retriesLever("svc-"+strconv.Itoa(i), "off", time.Hour))
		if !res.Replication.Unconfirmed() {
			t.Fatalf("apply %d to a primary without its replica: %+v", i, res.Replication)
		}
		unconfirmed = append(unconfirmed, res.Entry.ID)
	}
	if loss, err := d.Check(ctx); err != nil || loss != nil {
		t.Fatalf("before the failover: %v %v", loss, err)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	var reported *Loss
	go d.Run(runCtx, 500*time.Millisecond, func(l *Loss, _ error) {
		mu.Lock()
		defer mu.Unlock()
		if l != nil && reported == nil {
			reported = l
		}
	})
	primary.Kill()
	replica.Resume()
	promoted := sentinel.WaitMaster(t, replica.Addr, 30*time.Second)
	var loss *Loss
	waitFor(t, 10*time.Second, "the running detector did not report the loss", func() bool {
		mu.Lock()
		defer mu.Unlock()
		loss = reported
		return loss != nil
	})
	t.Logf("loss reported %v after the promotion: %s", time.Since(promoted).Round(time.Millisecond), loss)
	if loss.Missing != len(unconfirmed) || loss.Had.Count != 7 || loss.Entry == "" {
		t.Fatalf("%+v", loss)
	}
	// What survived: every confirmed apply; nothing that was not reported.
	seen := map[string]bool{}
	lost := 0
	for e, err := range journal.Entries(s.Journal().Range(ctx, "-", "+")) {
		if err != nil {
			t.Fatal(err)
		}
		seen[e.ID] = true
		if e.Event == journal.ControlPlaneLost {
			lost++
			if !strings.Contains(e.Outcome, "4 entries after stream id "+loss.After) {
				t.Fatalf("lost entry: %s", e.Outcome)
			}
		}
	}
	for id := range confirmed {
		if !seen[id] {
			t.Fatalf("confirmed apply %s lost", id)
		}
	}
	for _, id := range unconfirmed {
		if seen[id] {
			t.Logf("unconfirmed apply %s survived", id)
		}
	}
	// Another check, or another detector on the machine, journals nothing more.
	if again, err := NewLossDetector(s, markPath).Check(ctx); err != nil || again != nil {
		t.Fatalf("second detector: %v %v", again, err)
	}
	if _, err := d.Check(ctx); err != nil || lost != 1 {
		t.Fatalf("%v, %d lost entries", err, lost)
	}

	// This machine's record names exactly the lost applies for `journal
	// sync` (actions.Service.SyncLost re-applies them through the guards;
	// cmd/stormctl's TestJournalSyncRestoresThroughTheGuards), and the
	// survivors as needing nothing.
	lw, err := s.LostWrites(ctx, writtenPath)
	if err != nil || len(lw.Lost) != len(unconfirmed) || len(lw.Done) != len(confirmed) {
		t.Fatalf("%v: %d lost, %d done", err, len(lw.Lost), len(lw.Done))
	}
	for i, e := range lw.Lost {
		if e.ID != unconfirmed[i] || e.Event != journal.ActionApplied || e.New == nil {
			t.Fatalf("lost %d: %+v", i, e)
		}
	}
}

// TestHealthyFailoverLosesNothing: with the replica in sync, a failover
// loses nothing and nothing is reported.
func TestHealthyFailoverLosesNothing(t *testing.T) {
	ctx := context.Background()
	primary, replica := testenv.StartReplicated(t)
	sentinel := testenv.StartSentinel(t, primary.Addr, true)
	s, err := Open(ctx, config.Redis{URL: sentinel.URL(), Namespace: "h"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d := NewLossDetector(s, filepath.Join(t.TempDir(), "mark.json"))
	for i := range 5 {
		if res := apply(t, s, retriesLever("svc-"+strconv.Itoa(i), "off", time.Hour)); !res.Replication.Replicated {
			t.Fatalf("%+v", res.Replication)
		}
	}
	if _, err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}
	primary.Kill()
	sentinel.WaitMaster(t, replica.Addr, 30*time.Second)
	waitFor(t, 10*time.Second, "the store did not reach the new primary", func() bool {
		_, err := d.Check(ctx)
		return err == nil
	})
	if loss, err := d.Check(ctx); err != nil || loss != nil {
		t.Fatalf("healthy failover: %v %v", loss, err)
	}
	if n := s.Client().XLen(ctx, s.Keys().Journal()).Val(); n != 5 {
		t.Fatalf("journal has %d entries after the failover, want 5", n)
	}
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// A reader whose Redis user may not journal (flagd's role) still reports
// a loss; only the controlplane.lost entry waits for a writer's detector.
func TestLossReportedByAReaderThatMayNotJournal(t *testing.T) {
	ctx := context.Background()
	k := NewKeys("t")
	r := testenv.StartRedis(t, testenv.RedisOptions{ACL: []string{"default on nopass ~* &* +@all",
		strings.TrimPrefix(ACLCommand("flagd", Flagd, k, ">pw"), "ACL SETUSER ")}})
	writer := openStore(t, r, "", "")
	for _, target := range []string{"checkout", "cart"} {
		apply(t, writer, retriesLever(target, "off", time.Hour))
	}
	d := NewLossDetector(openStore(t, r, "flagd", "pw"), "")
	if loss, err := d.Check(ctx); err != nil || loss != nil {
		t.Fatalf("before: %v %v", loss, err)
	}
	writer.Client().Del(ctx, k.Journal(), k.JournalHead())
	loss, err := d.Check(ctx)
	if loss == nil || loss.Missing != 2 || loss.Entry != "" || err == nil || !strings.Contains(err.Error(), "journal the loss") {
		t.Fatalf("flagd's detector: %+v %v", loss, err)
	}
	if d.Report() == "" || d.Loss() == nil {
		t.Fatal("the loss is not reported")
	}
	if w, err := NewLossDetector(writer, "").Check(ctx); err != nil || w != nil {
		t.Fatalf("a writer that never saw the lost entries: %v %v", w, err)
	}
}
