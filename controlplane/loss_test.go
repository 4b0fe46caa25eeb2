package controlplane

import (
	"context"
	"os"
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

// startFailoverSentinel runs a Sentinel that declares the master down
// after a second and promotes its replica.
func startFailoverSentinel(t *testing.T, master string) (string, *redis.SentinelClient) {
	dir := t.TempDir()
	port := strconv.Itoa(testenv.FreePort(t))
	host, mport, _ := strings.Cut(master, ":")
	body := "port " + port + "\nbind 127.0.0.1\ndir " + dir + "\nsentinel monitor mymaster " + host + " " + mport + " 1\n" +
		"sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 5000\n"
	conf := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	runServer(t, conf, "--sentinel")
	addr := "127.0.0.1:" + port
	c := redis.NewSentinelClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	waitUntil(t, "sentinel did not find the replica", func() bool {
		r, err := c.Replicas(context.Background(), "mymaster").Result()
		return err == nil && len(r) == 1
	})
	return addr, c
}

// TestFailoverLossDetected: the replica falls behind (paused, its link
// dropped), a burst of applies is reported unreplicated, the primary is
// killed and Sentinel promotes the replica. Every acknowledged apply is
// either present after the promotion or was reported unreplicated; a
// running detector reports the loss within seconds and journals one
// controlplane.lost entry naming the range.
func TestFailoverLossDetected(t *testing.T) {
	ctx := context.Background()
	primary, replica := startReplicated(t)
	sentinel, sc := startFailoverSentinel(t, primary.Addr)
	s, err := Open(ctx, config.Redis{URL: "redis+sentinel://" + sentinel + "/mymaster", Namespace: "f", WaitTimeout: config.Duration(2 * time.Second)},
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
	var promoted time.Time
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if a, err := sc.GetMasterAddrByName(ctx, "mymaster").Result(); err == nil && len(a) == 2 && a[0]+":"+a[1] == replica.Addr {
			promoted = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sentinel did not promote the replica")
		}
	}
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

	// journal sync re-applies the lost applies from this machine's record,
	// once: every lever is back, each applied once in the journal.
	r, err := s.Reapply(ctx, writtenPath)
	if err != nil || len(r.Reapplied) != len(unconfirmed) || len(r.Expired) != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	if r, err := s.Reapply(ctx, writtenPath); err != nil || len(r.Reapplied)+len(r.Skipped) != 0 {
		t.Fatalf("second sync: %v %+v", err, r)
	}
	applied := map[string]int{}
	for e, err := range journal.Entries(s.Journal().Range(ctx, "-", "+")) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Event == journal.ActionApplied {
			applied[e.Target]++
		}
	}
	for i := range 7 {
		target := "svc-" + strconv.Itoa(i)
		if l, _, _, err := s.Get(ctx, "retries", target); err != nil || l == nil || applied[target] != 1 {
			t.Fatalf("%s: %v %v, applied %d times", target, l, err, applied[target])
		}
	}
	// Nothing here looks lost any more.
	if l, err := NewLossDetector(s, markPath).Check(ctx); err != nil || l != nil {
		t.Fatalf("after sync: %v %v", l, err)
	}
}

// TestHealthyFailoverLosesNothing: with the replica in sync, a failover
// loses nothing and nothing is reported.
func TestHealthyFailoverLosesNothing(t *testing.T) {
	ctx := context.Background()
	primary, replica := startReplicated(t)
	sentinel, sc := startFailoverSentinel(t, primary.Addr)
	s, err := Open(ctx, config.Redis{URL: "redis+sentinel://" + sentinel + "/mymaster", Namespace: "h"}, func(string) string { return "" })
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
	waitFor(t, 30*time.Second, "sentinel did not promote the replica", func() bool {
		a, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
		return err == nil && len(a) == 2 && a[0]+":"+a[1] == replica.Addr
	})
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
