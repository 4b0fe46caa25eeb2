package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

// syncPolicy: alice and bob may use every kind, carol (who syncs) not
// breakers; autoscaling needs a second person.
const syncPolicy = `current-context: lab
contexts:
  lab:
    redis: {namespace: sync, wait-timeout: 500ms}
    policy:
      roles: {alice: commander, bob: commander, carol: responder}
      kinds: {responder: [retries, degraded, autoscaling, shed]}
      approval: [autoscaling]
`

// TestJournalSyncRestoresThroughTheGuards: a real Sentinel failover to a
// replica that was paused loses five acknowledged (and reported
// unreplicated) lever writes. `journal sync`, run by carol, re-applies each
// through the guards as carol, journaled as a restore naming the lost entry
// and alice or bob: the apply with its evidence measured again, the release;
// the breaker her role may not use is refused and journaled, changing
// nothing; the autoscaling freeze is requested again; the lever that
// expired since is not re-applied and a note says so. A second sync
// doubles nothing and tries only the refusal again.
func TestJournalSyncRestoresThroughTheGuards(t *testing.T) {
	ctx := context.Background()
	primary, replica := testenv.StartReplicated(t)
	sentinel := testenv.StartSentinel(t, primary.Addr, true)
	e := newActionEnv(t)
	if err := os.WriteFile(e.env["STORMCTL_CONFIG"], []byte(syncPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	e.env["STORMCTL_REDIS_URL"] = sentinel.URL()

	kept, _ := e.expect(exit.OK, "alice", "action", "apply", "retries", "ledger->db", "off", "--ttl", "10m", "--reason", "ledger storm", "--force", "--yes", "-o", "json")
	if kept["replicated"] != true {
		t.Fatalf("healthy replica: %v", kept)
	}
	req, _ := e.expect(exit.Pending, "alice", "action", "apply", "autoscaling", "checkout", "frozen", "--ttl", "10m", "--reason", "freeze", "--force", "--yes", "-o", "json")

	replica.Pause()
	direct := redis.NewClient(&redis.Options{Addr: primary.Addr})
	defer direct.Close()
	direct.ClientKillByFilter(ctx, "TYPE", "replica")
	// Acknowledged, each said to be unreplicated (exit 7), then lost.
	e.expect(exit.Unreplicated, "alice", append([]string{"action", "apply", "retries", "checkout->payments", "off", "-o", "json"}, applyArgs...)...)
	e.expect(exit.Unreplicated, "alice", "action", "apply", "breaker", "payments", "open", "--ttl", "10m", "--reason", "payments down", "--force", "--yes", "-o", "json")
	e.expect(exit.Unreplicated, "alice", "action", "apply", "degraded", "ledger", "on", "--ttl", "2s", "--reason", "shed features", "--force", "--yes", "-o", "json")
	shortApplied := time.Now()
	e.expect(exit.Unreplicated, "bob", "action", "approve", req["request_id"].(string), "--yes", "-o", "json")
	e.expect(exit.Unreplicated, "alice", "action", "release", kept["action_id"].(string), "--reason", "ledger calm", "--yes", "-o", "json")

	primary.Kill()
	replica.Resume()
	sentinel.WaitMaster(t, replica.Addr, 30*time.Second)
	if wait := time.Until(shortApplied.Add(4 * time.Second)); wait > 0 {
		time.Sleep(wait) // the degraded lever has certainly expired
	}

	// The promoted replica has no replica of its own: the restores are
	// made and said to be unreplicated.
	out, errOut, code := e.run("carol", "journal", "sync", "-o", "json")
	if code != exit.Unreplicated {
		t.Fatalf("journal sync: exit %d\n%s%s", code, out, errOut)
	}
	var res journalSyncResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := map[string]actions.Restore{}
	for _, r := range res.Lost {
		got[string(r.Event)+" "+r.Kind+" "+r.Target] = r
	}
	want := map[string]string{
		"action.applied retries checkout->payments": actions.RestoreApplied,
		"action.applied breaker payments":           actions.RestoreRefused,
		"action.applied degraded ledger":            actions.RestoreExpired,
		"action.applied autoscaling checkout":       actions.RestorePending,
		"action.released retries ledger->db":        actions.RestoreApplied,
	}
	if len(res.Lost) != len(want) {
		t.Fatalf("%d lost writes handled, want %d: %s", len(res.Lost), len(want), out)
	}
	for k, outcome := range want {
		if r := got[k]; r.Outcome != outcome || len(r.Entries) == 0 && outcome != actions.RestorePending {
			t.Errorf("%s: %+v, want %s", k, r, outcome)
		}
	}
	if r := got["action.applied autoscaling checkout"]; r.RequestID == "" || r.Actor != "bob" {
		t.Errorf("autoscaling: %+v", r)
	}
	if d := got["action.applied breaker payments"].Detail; !strings.Contains(d, "carol (role responder) may not use breaker levers") {
		t.Errorf("breaker: %s", d)
	}

	byID := map[string]journal.Entry{}
	for _, en := range e.journalEntries() {
		byID[en.ID] = en
	}
	restoreOf := func(k string, ev journal.Event, actor string) journal.Entry {
		t.Helper()
		r := got[k]
		en := byID[r.Entries[0]]
		if en.Event != ev || en.Actor != "carol" || en.Restores == nil || en.Restores.Entry != r.Lost || en.Restores.Actor != actor {
			t.Fatalf("%s: journaled as %+v", k, en)
		}
		return en
	}
	if en := restoreOf("action.applied retries checkout->payments", journal.ActionApplied, "alice"); en.Forced || len(en.Evidence) == 0 ||
		en.Evidence[0].Query != "amplification" || !strings.Contains(en.Reason, "restore of alice's action.applied") {
		t.Errorf("restored apply: %+v", en)
	}
	restoreOf("action.applied breaker payments", journal.ActionRefused, "alice")
	restoreOf("action.released retries ledger->db", journal.ActionReleased, "alice")
	if en := restoreOf("action.applied degraded ledger", journal.Note, "alice"); !strings.Contains(en.Outcome, "not re-applied: its lever expired at") {
		t.Errorf("expired: %+v", en)
	}

	status, _ := e.expect(exit.OK, "carol", "status", "-o", "json")
	levers, _ := status["levers"].([]any)
	if len(levers) != 1 {
		t.Fatalf("levers after sync: %v", levers)
	}
	if l := levers[0].(map[string]any); l["target"] != "checkout->payments" || l["actor"] != "carol" {
		t.Fatalf("restored lever: %v", l)
	}

	// Again: only the refusal is tried (and refused) again; nothing doubles.
	out, errOut, code = e.run("carol", "journal", "sync", "-o", "json")
	res = journalSyncResult{}
	if code != exit.OK || json.Unmarshal([]byte(out), &res) != nil || len(res.Lost) != 1 || res.Lost[0].Kind != "breaker" || res.Lost[0].Outcome != actions.RestoreRefused {
		t.Fatalf("second sync: exit %d\n%s%s", code, out, errOut)
	}
	applied := 0
	for _, en := range e.journalEntries() {
		if en.Event == journal.ActionApplied && en.Target == "checkout->payments" {
			applied++
		}
	}
	if applied != 1 {
		t.Fatalf("checkout->payments applied %d times after two syncs", applied)
	}
}
