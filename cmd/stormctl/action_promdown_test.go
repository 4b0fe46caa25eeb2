package main

import (
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

// lastApplied is the newest action.applied entry for target.
func lastApplied(es []journal.Entry, target string) *journal.Entry {
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Event == journal.ActionApplied && es[i].Target == target {
			return &es[i]
		}
	}
	return nil
}

// With no inventory configured, the names come from Prometheus; once it is
// down, the names read earlier (cached locally) and those of levers already
// in Redis still let a responder act, and --force lets an unverifiable
// target through, on the record.
func TestActionWhilePrometheusDown(t *testing.T) {
	e := newActionEnv(t)
	// One successful inventory read while Prometheus is up caches the names.
	e.expect(exit.OK, "alice", "action", "plan", "retries", "checkout->payments", "off", "--ttl", "10m", "--reason", "amplification 4x")
	e.prom.Stop()

	// Unforced, the evidence guard cannot be satisfied; the refusal says so.
	_, msg := e.expect(exit.Refused, "alice", append([]string{"retries", "off", "checkout->payments"}, applyArgs...)...)
	if !strings.Contains(msg, "evidence guard") || !strings.Contains(msg, strings.TrimPrefix(e.env["STORMCTL_PROMETHEUS_URL"], "http://")) {
		t.Fatalf("unforced refusal must name the guard and the unreachable Prometheus: %s", msg)
	}
	// Forced: the cached names confirm the target; the entry says where from.
	res, msg := e.expect(exit.OK, "alice", append([]string{"retries", "off", "checkout->payments", "--force", "-o", "json"}, applyArgs...)...)
	if res["forced"] != true || res["unverified"] != nil {
		t.Fatalf("forced apply on a cached name: %v\n%s", res, msg)
	}
	if en := lastApplied(e.journalEntries(), "checkout->payments"); en == nil || !en.Forced ||
		!strings.Contains(en.Outcome, `service "checkout" known from cached label values`) {
		t.Fatalf("applied entry must be forced and say the names were cached: %+v", en)
	}

	// A name never seen: refused without --force, naming why.
	_, msg = e.expect(exit.Refused, "alice", "shed", "search", "20", "--ttl", "5m", "--reason", "pool full", "--yes")
	for _, want := range []string{"validation guard", `cannot confirm that service "search" exists`, "not in the config inventory nor in any lever in Redis",
		"connection refused", "label values last read at", "--force (journaled as target unverified)"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("unforced refusal of an unverifiable target lacks %q: %s", want, msg)
		}
	}
	// ... and allowed with --force, journaled "target unverified".
	res, msg = e.expect(exit.OK, "alice", "shed", "search", "20", "--ttl", "5m", "--reason", "pool full", "--yes", "--force", "-o", "json")
	if u, _ := res["unverified"].([]any); len(u) != 1 || u[0] != `service "search"` {
		t.Fatalf("forced apply of an unverifiable target: %v\n%s", res, msg)
	}
	if en := lastApplied(e.journalEntries(), "search"); en == nil || !strings.HasPrefix(en.Outcome, `applied; target unverified: service "search"`) {
		t.Fatalf("applied entry must say target unverified: %+v", en)
	}

	// The lever now in Redis confirms the name for the next action.
	res, _ = e.expect(exit.OK, "alice", "degraded", "on", "search", "--ttl", "5m", "--reason", "pool full", "--yes", "--force", "-o", "json")
	if res["unverified"] != nil || !strings.Contains(guardDetail(res, "validation"), "known from a lever in Redis") {
		t.Fatalf("a name held by a lever in Redis is known: %v", res)
	}
	// The summary on stderr says so too.
	_, msg = e.expect(exit.OK, "alice", "retries", "off", "search->index", "--ttl", "5m", "--reason", "pool full", "--yes", "--force")
	if !strings.Contains(msg, `(TARGET UNVERIFIED: dependency "index")`) {
		t.Fatalf("summary: %s", msg)
	}
}

func guardDetail(res map[string]any, guard string) string {
	gs, _ := res["guards"].([]any)
	for _, g := range gs {
		if m, _ := g.(map[string]any); m["guard"] == guard {
			s, _ := m["detail"].(string)
			return s
		}
	}
	return ""
}
