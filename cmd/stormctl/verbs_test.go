package main

import (
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/exit"
)

// The shortcuts take `action apply`'s KIND TARGET VALUE order too, and
// arguments in the wrong order get the right form, before any guard runs.
func TestShortcutForms(t *testing.T) {
	e := newActionEnv(t)
	for _, c := range []struct {
		args []string
		form string
	}{
		{[]string{"shed", "20", "checkout"}, "`stormctl shed SERVICE PERCENT`, e.g. stormctl shed checkout 20"},
		{[]string{"retries", "cap", "checkout->payments", "2"}, "`stormctl retries cap N TARGET`"},
		{[]string{"retries", "2", "checkout->payments"}, "`stormctl retries TARGET off|cap:N`"},
		{[]string{"action", "apply", "retries", "off", "checkout->payments"}, "`stormctl action apply KIND TARGET VALUE`, e.g. stormctl action apply retries checkout->payments off"},
	} {
		out, msg, code := e.run("alice", append(c.args, applyArgs...)...)
		if code != exit.Usage || !strings.Contains(msg, "arguments out of order: the form is "+c.form) || out != "" {
			t.Errorf("%v: exit %d: %s", c.args, code, msg)
		}
	}
	// Nothing was journaled: a usage error is not an attempt.
	if es := e.journalEntries(); len(es) != 0 {
		t.Fatalf("journaled: %+v", es)
	}
	res, _ := e.expect(exit.OK, "alice", append([]string{"retries", "checkout->payments", "cap:2", "-o", "json"}, applyArgs...)...)
	if res["kind"] != "retries" || res["value"] != "cap:2" || res["targets"].([]any)[0].(map[string]any)["target"] != "checkout->payments" {
		t.Fatalf("KIND TARGET VALUE: %v", res)
	}
	// KIND VALUE TARGET reads like `retries off TARGET`.
	res, _ = e.expect(exit.OK, "alice", append([]string{"retries", "cap:3", "checkout", "-o", "json"}, applyArgs...)...)
	if res["kind"] != "retries" || res["value"] != "cap:3" || res["targets"].([]any)[0].(map[string]any)["target"] != "checkout" {
		t.Fatalf("KIND VALUE TARGET: %v", res)
	}
	res, _ = e.expect(exit.OK, "alice", append([]string{"breaker", "payments", "open", "-o", "json", "--force"}, applyArgs...)...)
	if res["kind"] != "breaker" || res["value"] != "open" {
		t.Fatalf("breaker TARGET open: %v", res)
	}
}

// Unquoted, checkout->payments reaches stormctl as `checkout-` (the shell
// sends stdout to a file named payments): the refusal says to quote it.
func TestRedirectSplitTargetHint(t *testing.T) {
	e := newActionEnv(t)
	_, msg := e.expect(exit.Refused, "alice", append([]string{"retries", "off", "checkout-"}, applyArgs...)...)
	if !strings.Contains(msg, `unknown service "checkout-"`) || !strings.Contains(msg, "quote it, e.g. 'checkout->DEPENDENCY'") {
		t.Fatalf("checkout-: %s", msg)
	}
}

func TestPlaybookValidateRefusesTTLAboveMaximum(t *testing.T) {
	e := newActionEnv(t)
	path := "../../playbooks/testdata/broken/ttl-too-long.yaml"
	out, msg, code := e.run("alice", "playbook", "validate", path)
	if code != exit.Usage || !strings.Contains(msg, path+":11:10: ttl 1h0m0s exceeds the maximum 15m0s for breaker levers") || out != "" {
		t.Fatalf("exit %d: %s %s", code, out, msg)
	}
	v, _ := e.expect(exit.Usage, "alice", "playbook", "validate", path, "-o", "json")
	f := v["files"].([]any)[0].(map[string]any)
	p := f["problems"].([]any)[0].(map[string]any)
	if f["ok"] != false || p["line"] != 11.0 || p["col"] != 10.0 || v["error"].(map[string]any)["exit_code"] != 2.0 {
		t.Fatalf("validate -o json: %v", v)
	}
}
