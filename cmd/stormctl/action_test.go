package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

// actionEnv is a context on a real redis-server and a Prometheus holding
// the storm fixture, with a policy: autoscaling needs approval, victor is
// a viewer.
type actionEnv struct {
	t    *testing.T
	env  map[string]string
	prom *testenv.Prometheus
}

func newActionEnv(t *testing.T) *actionEnv {
	t.Helper()
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormFixture(fixtureEnd())})
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	dir := t.TempDir()
	cfg := `current-context: lab
contexts:
  lab:
    redis: {namespace: cli}
    policy:
      roles: {victor: viewer}
      approval: [autoscaling]
`
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return &actionEnv{t: t, prom: prom, env: map[string]string{
		"STORMCTL_CONFIG": path, "STORMCTL_PROMETHEUS_URL": prom.URL, "STORMCTL_REDIS_URL": r.URL("", ""),
		"STORMCTL_ACTOR": "alice", "XDG_STATE_HOME": filepath.Join(dir, "state"), "XDG_CACHE_HOME": filepath.Join(dir, "cache"),
	}}
}

// run runs stormctl as actor, with stdin and a terminal when in is not "".
func (e *actionEnv) run(actor, in string, args ...string) (string, string, int) {
	e.t.Helper()
	for k, v := range e.env {
		e.t.Setenv(k, v)
	}
	e.t.Setenv("STORMCTL_ACTOR", actor)
	io, stdin, out, errOut := iostreams.Test()
	if in != "" {
		stdin.WriteString(in)
		io.SetTTY(true, false)
	}
	code := Main(args, io)
	return out.String(), errOut.String(), code
}

// runTTY runs stormctl as alice with stdout on a terminal or in a pipe.
func (e *actionEnv) runTTY(tty bool, args ...string) (string, string, int) {
	e.t.Helper()
	for k, v := range e.env {
		e.t.Setenv(k, v)
	}
	io, _, out, errOut := iostreams.Test()
	io.SetTTY(false, tty)
	code := Main(args, io)
	return out.String(), errOut.String(), code
}

func (e *actionEnv) expect(code int, actor string, args ...string) (map[string]any, string) {
	e.t.Helper()
	out, errOut, got := e.run(actor, "", args...)
	if got != code {
		e.t.Fatalf("stormctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), got, code, out, errOut)
	}
	var v map[string]any
	if strings.HasPrefix(strings.TrimSpace(out), "{") {
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			e.t.Fatalf("stdout is not JSON: %v\n%s", err, out)
		}
	}
	return v, errOut
}

var applyArgs = []string{"--ttl", "10m", "--reason", "amplification 4x", "--yes"}

func TestActionExitCodes(t *testing.T) {
	e := newActionEnv(t)
	// Refusals exit 3 and say why.
	_, msg := e.expect(exit.Refused, "alice", append([]string{"retries", "off", "checkout->paymnts"}, applyArgs...)...)
	if !strings.Contains(msg, "did you mean payments") {
		t.Fatalf("typo: %s", msg)
	}
	_, msg = e.expect(exit.Refused, "victor", append([]string{"action", "apply", "retries", "checkout->payments", "off"}, applyArgs...)...)
	if !strings.Contains(msg, "victor (role viewer) may not use retries levers") {
		t.Fatalf("policy: %s", msg)
	}
	_, msg = e.expect(exit.Usage, "alice", "action", "apply", "retries", "checkout")
	if !strings.Contains(msg, "accepts 3 arg") {
		t.Fatalf("usage: %s", msg)
	}

	// Applied, with the stable JSON shape.
	res, _ := e.expect(exit.OK, "alice", append([]string{"retries", "off", "checkout->payments", "-o", "json"}, applyArgs...)...)
	tgt := res["targets"].([]any)[0].(map[string]any)
	ev := tgt["evidence"].([]any)[0].(map[string]any)
	if res["action_id"] == "" || res["operation"] != "apply" || len(res["guards"].([]any)) != 10 || tgt["before"] != nil ||
		tgt["after"].(map[string]any)["value"] != "off" || tgt["journal_entry"] == "" || ev["query"] != "amplification" || ev["value"] != 4.0 {
		t.Fatalf("apply -o json: %v", res)
	}
	id := res["action_id"].(string)

	// Someone else on the same lever: conflict, exit 6.
	_, msg = e.expect(exit.Conflict, "bob", append([]string{"retries", "cap", "2", "checkout->payments"}, applyArgs...)...)
	if !strings.Contains(msg, "of alice since") {
		t.Fatalf("conflict: %s", msg)
	}
	// ... unless superseding; releasing bob's action restores alice's.
	res, _ = e.expect(exit.OK, "bob", append([]string{"retries", "cap", "2", "checkout->payments", "--supersede", "-o", "json"}, applyArgs...)...)
	e.expect(exit.OK, "bob", "action", "release", res["action_id"].(string), "--reason", "cap was not enough", "--yes")
	status, _ := e.expect(exit.OK, "alice", "status", "-o", "json")
	if lv := status["levers"].([]any); len(lv) != 1 || lv[0].(map[string]any)["action_id"] != id {
		t.Fatalf("after releasing the superseding action: %v", status)
	}

	// A kind that needs approval: pending, exit 5, with the request id.
	res, msg = e.expect(exit.Pending, "alice", append([]string{"autoscaling", "freeze", "checkout", "--force", "-o", "json"}, applyArgs...)...)
	req, _ := res["request_id"].(string)
	if req == "" || !strings.Contains(msg, "stormctl action approve "+req) {
		t.Fatalf("pending: %v %s", res, msg)
	}
	_, msg = e.expect(exit.Refused, "alice", "action", "approve", req, "--yes")
	if !strings.Contains(msg, "may not approve their own request") {
		t.Fatalf("self-approval: %s", msg)
	}
	res, _ = e.expect(exit.OK, "bob", "action", "approve", req, "--yes", "-o", "json")
	if res["approved_by"] != "bob" || res["actor"] != "alice" || res["forced"] != true {
		t.Fatalf("approved: %v", res)
	}

	// Extend and list.
	_, msg = e.expect(exit.Refused, "alice", "action", "extend", id, "--ttl", "20m", "--yes")
	if !strings.Contains(msg, "refused by the reason guard: a reason is required") {
		t.Fatalf("extend without a reason: %s", msg)
	}
	e.expect(exit.OK, "alice", "action", "extend", id, "--ttl", "20m", "--reason", "still storming", "--yes")
	_, msg = e.expect(exit.Refused, "alice", "action", "extend", id, "--ttl", "2h", "--reason", "still storming")
	if !strings.Contains(msg, "exceeds the maximum 30m0s") {
		t.Fatalf("extend too far: %s", msg)
	}
	out, _, _ := e.run("alice", "", "action", "list", "-o", "json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 2 || list[0]["state"] != "active" {
		t.Fatalf("list: %v %s", err, out)
	}
	_, msg = e.expect(exit.Refused, "alice", "action", "release", id, "--yes")
	if !strings.Contains(msg, "refused by the reason guard") {
		t.Fatalf("release without a reason: %s", msg)
	}
	_, msg = e.expect(1, "alice", "action", "release", "01NOSUCHACTION", "--reason", "done")
	if !strings.Contains(msg, "no active action 01NOSUCHACTION") {
		t.Fatalf("unknown action: %s", msg)
	}
}

func TestActionConfirmAtTerminal(t *testing.T) {
	e := newActionEnv(t)
	args := []string{"shed", "checkout", "20", "--ttl", "5m", "--reason", "pool 98% full"}
	_, errOut, code := e.run("alice", "checkout-service\n", args...)
	if code != exit.Refused || !strings.Contains(errOut, `Type "checkout" to confirm`) || !strings.Contains(errOut, "did not match") {
		t.Fatalf("wrong text typed: exit %d: %s", code, errOut)
	}
	out, errOut, code := e.run("alice", "checkout\n", args...)
	if code != exit.OK || !strings.Contains(out, "checkout\t(normal)\t20 by alice") || !strings.Contains(errOut, "applied shed=20 on checkout") {
		t.Fatalf("typed the target: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestActionRedisUnreachable(t *testing.T) {
	e := newActionEnv(t)
	e.env["STORMCTL_REDIS_URL"] = "redis://127.0.0.1:1"
	_, errOut, code := e.run("alice", "", append([]string{"retries", "off", "checkout->payments"}, applyArgs...)...)
	if code != exit.Error || !strings.Contains(errOut, "127.0.0.1:1") || !strings.Contains(errOut, "unreachable") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	pending, err := journal.Pending(filepath.Join(e.env["XDG_STATE_HOME"], "stormctl", "journal-pending.jsonl"))
	if err != nil || len(pending) != 1 || pending[0].Event != journal.ActionRefused || pending[0].Outcome != "error" || !pending[0].Offline {
		t.Fatalf("the attempt must wait in the pending file: %+v %v", pending, err)
	}
	// A plan too, as a plan.
	_, errOut, code = e.run("alice", "", "action", "plan", "retries", "checkout->payments", "off", "--ttl", "10m", "--reason", "amplification 4x")
	pending, err = journal.Pending(filepath.Join(e.env["XDG_STATE_HOME"], "stormctl", "journal-pending.jsonl"))
	if code != exit.Error || !strings.Contains(errOut, "127.0.0.1:1") || err != nil || len(pending) != 2 ||
		pending[1].Event != journal.ActionPlanned || pending[1].Outcome != "error" || pending[1].Actor != "alice" {
		t.Fatalf("plan while Redis is down: exit %d %s: %+v %v", code, errOut, pending, err)
	}
}
