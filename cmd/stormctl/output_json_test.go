package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/iostreams"
)

// leafCommands lists every runnable command as its path of names, without
// help, completion and those skip names.
func leafCommands(skip func(name string) bool) [][]string {
	var leaves [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || (skip != nil && skip(strings.Join(path, " "))) {
			return
		}
		if !c.HasSubCommands() && c.Runnable() {
			leaves = append(leaves, path)
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	io, _, _, _ := iostreams.Test()
	walk(newRootCmd(newFactory(io, os.Getenv)), nil)
	return leaves
}

// Every command refuses an unknown -o with exit 2 before doing anything,
// even those that print no result.
func TestUnknownOutputFormatExits2(t *testing.T) {
	t.Setenv("STORMCTL_CONFIG", os.DevNull) // no config file
	t.Setenv("STORMCTL_REDIS_URL", "redis://127.0.0.1:1")
	t.Setenv("STORMCTL_PROMETHEUS_URL", "http://127.0.0.1:1")
	leaves := leafCommands(nil)
	if len(leaves) < 30 {
		t.Fatalf("only %d commands found", len(leaves))
	}
	for _, path := range leaves {
		io, _, out, errOut := iostreams.Test()
		// Enough arguments for any command, so only -o can be wrong.
		args := append(append([]string{}, path...), "-o", "xml")
		code := Main(args, io)
		if code != exit.Usage || out.Len() != 0 {
			t.Errorf("stormctl %s: exit %d, want 2; stdout %q stderr %q", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// With -o json a command prints one JSON document on stdout whatever
// happens: its result, the result with the refusal that ended it, or the
// error alone.
func TestJSONOutputIncludesRefusals(t *testing.T) {
	e := newActionEnv(t)
	doc := func(code int, args ...string) map[string]any {
		t.Helper()
		out, errOut, got := e.run("alice", append(args, "-o", "json")...)
		if got != code {
			t.Fatalf("stormctl %s: exit %d, want %d\n%s", strings.Join(args, " "), got, code, errOut)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("stormctl %s -o json: stdout is not one JSON document: %v\n%q", strings.Join(args, " "), err, out)
		}
		return v
	}
	errOf := func(v map[string]any) map[string]any {
		t.Helper()
		m, ok := v["error"].(map[string]any)
		if !ok {
			t.Fatalf("no error object: %v", v)
		}
		return m
	}

	// A guard's refusal: the result with the guards, and the refusal.
	v := doc(exit.Refused, append([]string{"retries", "off", "checkout->paymnts"}, applyArgs...)...)
	if r := errOf(v); r["guard"] != "validation" || r["exit_code"] != 3.0 || !strings.Contains(r["reason"].(string), `unknown dependency "paymnts"`) ||
		!strings.Contains(r["hint"].(string), "did you mean payments") || len(r["journal_entries"].([]any)) != 1 || v["operation"] != "apply" {
		t.Fatalf("refused apply: %v", v)
	}
	v = doc(exit.Refused, "action", "plan", "retries", "checkout->payments", "off", "--ttl", "10m")
	if r := errOf(v); r["guard"] != "reason" || v["operation"] != "plan" {
		t.Fatalf("refused plan: %v", v)
	}
	v = doc(exit.OK, append([]string{"retries", "off", "checkout->payments"}, applyArgs...)...)
	if _, failed := v["error"]; failed || v["action_id"] == "" {
		t.Fatalf("applied: %v", v)
	}
	v = doc(exit.Conflict, append([]string{"retries", "cap", "2", "checkout->payments"}, applyArgs...)...)
	if r := errOf(v); r["guard"] != "conflict" || r["exit_code"] != 6.0 || r["holder"].(map[string]any)["actor"] != "alice" {
		t.Fatalf("conflict: %v", v)
	}
	v = doc(exit.Pending, append([]string{"autoscaling", "freeze", "checkout", "--force"}, applyArgs...)...)
	if r := errOf(v); r["exit_code"] != 5.0 || r["request_id"] == "" || r["request_id"] != v["request_id"] {
		t.Fatalf("pending: %v", v)
	}
	// A failure that is not a refusal: the error alone.
	v = doc(exit.Error, "action", "release", "01NOSUCHACTION", "--reason", "done")
	if r := errOf(v); r["exit_code"] != 1.0 || !strings.Contains(r["message"].(string), "no active action 01NOSUCHACTION") {
		t.Fatalf("release unknown: %v", v)
	}
	// journal verify -o json, intact and broken.
	v = doc(exit.OK, "journal", "verify")
	if v["chain_intact"] != true || v["entries"].(float64) < 5 || v["head"] == "" {
		t.Fatalf("verify: %v", v)
	}
	v = doc(exit.CheckFailed, "journal", "verify", "--head", strings.Repeat("0", 64))
	if r := errOf(v); v["head_reached"] != false || r["exit_code"] != 4.0 {
		t.Fatalf("verify with a wrong head: %v", v)
	}
	// Redis unreachable: the error names the address.
	e.env["STORMCTL_REDIS_URL"] = "redis://127.0.0.1:1"
	v = doc(exit.Error, "status")
	if r := errOf(v); !strings.Contains(r["message"].(string), "127.0.0.1:1") {
		t.Fatalf("status, Redis down: %v", v)
	}
}

// journal tail -o json is JSON Lines: one stored entry per line.
func TestJournalTailJSONLines(t *testing.T) {
	e := newActionEnv(t)
	e.expect(exit.OK, "alice", append([]string{"retries", "off", "checkout->payments"}, applyArgs...)...)
	e.expect(exit.Refused, "alice", append([]string{"shed", "checkout", "200"}, applyArgs...)...)
	if es := e.journalEntries(); len(es) != 2 || es[0].Event != "action.applied" || es[1].Event != "action.refused" {
		t.Fatalf("journal tail -o json: %+v", es)
	}
}

// Every command run with -o json prints one JSON document on stdout, even
// when it fails before doing anything (here: no servers, no arguments).
func TestEveryCommandPrintsJSON(t *testing.T) {
	t.Setenv("STORMCTL_CONFIG", os.DevNull) // no config file
	t.Setenv("STORMCTL_REDIS_URL", "redis://127.0.0.1:1")
	t.Setenv("STORMCTL_PROMETHEUS_URL", "http://127.0.0.1:1")
	t.Setenv("STORMCTL_ACTOR", "alice")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	// demo, lab run and playbook run would run a storm (their JSON is
	// tested beside them).
	leaves := leafCommands(func(name string) bool { return name == "demo" || name == "lab run" || name == "playbook run" })
	if len(leaves) < 30 {
		t.Fatalf("only %d commands found", len(leaves))
	}
	for _, path := range leaves {
		io, _, out, errOut := iostreams.Test()
		code := Main(append(append([]string{}, path...), "-o", "json"), io)
		if !json.Valid(out.Bytes()) {
			t.Errorf("stormctl %s -o json: exit %d, stdout is not JSON: %q (stderr %.200q)", strings.Join(path, " "), code, out, errOut)
		}
	}
}

// A journal tail that fails prints its error as one JSON line, so the
// output stays JSON Lines.
func TestJournalTailFailureIsOneJSONLine(t *testing.T) {
	t.Setenv("STORMCTL_CONFIG", os.DevNull) // no config file
	t.Setenv("STORMCTL_REDIS_URL", "redis://127.0.0.1:1")
	io, _, out, _ := iostreams.Test()
	if code := Main([]string{"journal", "tail", "-o", "json"}, io); code != exit.Error {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	var doc failureDoc
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &doc) != nil || doc.Error == nil || !strings.Contains(doc.Error.Message, "127.0.0.1:1") {
		t.Fatalf("stdout %q", out)
	}
}
