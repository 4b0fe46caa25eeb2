package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

// journalEntries reads the whole journal through `journal tail -o json`.
func (e *actionEnv) journalEntries() []journal.Entry {
	e.t.Helper()
	out, errOut, code := e.run("alice", "", "journal", "tail", "-n", "1000", "-o", "json")
	if code != 0 {
		e.t.Fatalf("journal tail: exit %d: %s", code, errOut)
	}
	var es []journal.Entry
	for line := range strings.Lines(out) {
		var en journal.Entry
		if err := json.Unmarshal([]byte(line), &en); err != nil {
			e.t.Fatalf("journal tail -o json line %q: %v", line, err)
		}
		es = append(es, en)
	}
	return es
}

// TestActionTTLBounds: a TTL under a second or negative is refused by the
// TTL guard in a plan and an apply alike, each journaled, and a negative
// one says so instead of "required".
func TestActionTTLBounds(t *testing.T) {
	e := newActionEnv(t)
	cases := []struct{ ttl, msg string }{
		{"-5m", "TTL -5m0s is negative"},
		{"500ms", "TTL 500ms is under the minimum 1s"},
		{"0s", "a TTL is required"},
	}
	n := 0
	for _, c := range cases {
		for _, op := range []string{"plan", "apply"} {
			_, msg := e.expect(exit.Refused, "alice", "action", op, "retries", "checkout->payments", "off",
				"--ttl="+c.ttl, "--reason", "amplification 4x", "--yes")
			if !strings.Contains(msg, c.msg) || !strings.Contains(msg, "ttl guard") {
				t.Fatalf("%s --ttl %s: %s, want %q", op, c.ttl, msg, c.msg)
			}
			n++
		}
	}
	// extend is held to the same bounds.
	res, _ := e.expect(exit.OK, "alice", "retries", "off", "checkout->payments", "--ttl", "5m", "--reason", "amplification 4x", "--yes", "-o", "json")
	n++
	for _, c := range cases[:2] {
		_, msg := e.expect(exit.Refused, "alice", "action", "extend", res["action_id"].(string), "--ttl="+c.ttl, "--reason", "still slow")
		if !strings.Contains(msg, c.msg) {
			t.Fatalf("extend --ttl %s: %s, want %q", c.ttl, msg, c.msg)
		}
		n++
	}
	es := e.journalEntries()
	if len(es) != n {
		t.Fatalf("journal has %d entries, want one per attempt (%d)", len(es), n)
	}
	for _, en := range es {
		if en.Event == journal.ActionApplied {
			continue
		}
		planned := en.Event == journal.ActionPlanned && strings.Contains(en.Outcome, "refused by the ttl guard")
		refused := en.Event == journal.ActionRefused && en.Outcome == "refused: ttl"
		if !planned && !refused {
			t.Fatalf("journal entry %s %q, want a ttl refusal", en.Event, en.Outcome)
		}
	}
	st, _ := e.expect(exit.OK, "alice", "status", "-o", "json")
	if lv := st["levers"].([]any); len(lv) != 1 || lv[0].(map[string]any)["action_id"] != res["action_id"] {
		t.Fatalf("a refused TTL changed a lever: %v", st)
	}
}

// TestActionPendingSaysOnlyPending: an apply that needs approval exits 5,
// prints nothing that reads as applied, and says what to run.
func TestActionPendingSaysOnlyPending(t *testing.T) {
	e := newActionEnv(t)
	for _, args := range [][]string{
		{"autoscaling", "freeze", "checkout"},
		{"action", "apply", "autoscaling", "checkout", "frozen"},
	} {
		out, errOut, code := e.run("alice", "", append(args, "--force", "--ttl", "10m", "--reason", "replica churn", "--yes")...)
		if code != exit.Pending {
			t.Fatalf("%v: exit %d, want 5\n%s%s", args, code, out, errOut)
		}
		reqs := regexp.MustCompile("`stormctl action approve ([0-9A-Z]+)`").FindStringSubmatch(errOut)
		if out != "" || reqs == nil || !strings.Contains(errOut, "approval pending") ||
			strings.Contains(strings.ToLower(errOut), "applied") || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("%v: stdout %q stderr %q, want only the pending notice with the approve command", args, out, errOut)
		}
		if st, _ := e.expect(exit.OK, "alice", "status", "-o", "json"); st["levers"] != nil && len(st["levers"].([]any)) != 0 {
			t.Fatalf("pending set a lever: %v", st)
		}
	}
	// A script reading -o json sees a request, not an apply.
	res, _ := e.expect(exit.Pending, "alice", "autoscaling", "freeze", "checkout", "--force", "--ttl", "10m", "--reason", "churn", "--yes", "-o", "json")
	if res["operation"] != "request" || res["request_id"] == "" {
		t.Fatalf("pending -o json: %v", res)
	}
}

// TestActionIdempotencyKeyBindsTheRequest: a retried command replays the
// first result exactly; the key reused for another lever or TTL exits 2,
// is journaled, and changes nothing.
func TestActionIdempotencyKeyBindsTheRequest(t *testing.T) {
	e := newActionEnv(t)
	args := []string{"retries", "off", "checkout->payments", "--idempotency-key", "INC-7/step-2", "-o", "json", "--reason", "amplification 4x", "--yes"}
	first, _ := e.expect(exit.OK, "alice", append(args, "--ttl", "10m")...)
	again, msg := e.expect(exit.OK, "alice", append(args, "--ttl", "10m")...)
	for _, k := range []string{"action_id", "expires_at", "ttl", "targets"} {
		a, _ := json.Marshal(first[k])
		b, _ := json.Marshal(again[k])
		if k == "targets" {
			b = []byte(strings.ReplaceAll(string(b), `,"replayed":true`, ""))
		}
		if string(a) != string(b) || first[k] == nil {
			t.Fatalf("replayed %s = %s, first %s (%s)", k, b, a, msg)
		}
	}
	n := len(e.journalEntries())
	for _, other := range [][]string{
		append(args, "--ttl", "5m"),
		{"breaker", "open", "payments", "--ttl", "5m", "--idempotency-key", "INC-7/step-2", "--reason", "p99", "--yes", "--force"},
	} {
		_, msg := e.expect(exit.Usage, "alice", other...)
		if !strings.Contains(msg, `idempotency key "INC-7/step-2" was first used for retries checkout->payments=off`) {
			t.Fatalf("reuse: %s", msg)
		}
	}
	es := e.journalEntries()
	if len(es) != n+2 || es[len(es)-1].Outcome != "refused: idempotency" || es[len(es)-2].Outcome != "refused: idempotency" {
		t.Fatalf("journal after two reuses: %d entries (want %d), last %+v", len(es), n+2, es[len(es)-1])
	}
	st, _ := e.expect(exit.OK, "alice", "status", "-o", "json")
	if lv := st["levers"].([]any); len(lv) != 1 || lv[0].(map[string]any)["action_id"] != first["action_id"] {
		t.Fatalf("levers after the reuses: %v", st["levers"])
	}
}
