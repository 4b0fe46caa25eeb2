package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/testenv"
)

// quickPlaybook is retry-amplification with a short wait, for the recorded
// storm fixture (which no lever can end).
const quickPlaybook = `apiVersion: stormctl/v1
kind: Playbook
name: quick
title: Retries are the load
parameters: [{name: service, required: true}, {name: dependency, required: true}]
steps:
  - id: confirm
    type: check
    query: amplification
    params: {service: "{{ .params.service }}", dependency: "{{ .params.dependency }}"}
    expect: "> 1.3"
  - id: idempotent
    type: ask
    question: Do calls to {{ .params.dependency }} carry an idempotency key?
    choices: ["yes", "no", "unknown"]
  - id: shed-first
    type: action
    kind: shed
    target: "{{ .params.service }}"
    value: "10"
    ttl: 5m
    reason: shed before the lever
  - id: retries-off
    type: action
    kind: retries
    target: "{{ .params.service }}->{{ .params.dependency }}"
    value: "off"
    ttl: 10m
    reason: "{{ .params.service }} sends four attempts per request"
    requires: [confirm]
  - id: recovered
    type: wait
    query: amplification
    params: {service: "{{ .params.service }}", dependency: "{{ .params.dependency }}"}
    expect: "< 1.1"
    timeout: 4s
    every: 1s
`

// At a terminal, each step is shown and run on Enter: the check's
// evidence, the ask's answer (re-asked until it is a choice), a skipped
// step, the action's plan, the responder's reason and the typed target;
// q pauses the run, and the journal says where it paused.
func TestPlaybookRunInteractive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and prometheus")
	}
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormFixture(fixtureEnd())})
	rd := testenv.StartRedis(t, testenv.RedisOptions{})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("contexts:\n  test:\n    redis:\n      namespace: interactive\ncurrent-context: test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "pb"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pb", "quick.yaml"), []byte(quickPlaybook), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"STORMCTL_CONFIG": cfg, "STORMCTL_PROMETHEUS_URL": prom.URL, "STORMCTL_REDIS_URL": rd.URL("", ""),
		"STORMCTL_ACTOR": "alice", "XDG_STATE_HOME": filepath.Join(dir, "state"), "NO_COLOR": "1"} {
		t.Setenv(k, v)
	}
	run := func(stdin string, tty bool, args ...string) (int, string, string) {
		io, in, out, errOut := iostreams.Test()
		io.SetTTY(tty, false)
		in.WriteString(stdin)
		code := Main(args, io)
		return code, out.String(), errOut.String()
	}
	if code, _, errOut := run("", false, "incident", "open", "checkout retry storm"); code != 0 {
		t.Fatal(errOut)
	}
	answers := strings.Join([]string{
		"",                   // run confirm
		"",                   // run idempotent
		"maybe",              // not a choice: asked again
		"no",                 //
		"s",                  // skip shed-first
		"",                   // run retries-off: the plan is shown
		"paged at 03:12",     // the responder's reason
		"checkout->payments", // typed to confirm
		"q",                  // pause before the wait
	}, "\n") + "\n"
	code, out, errOut := run(answers, true, "playbook", "run", "quick", "--playbooks", filepath.Join(dir, "pb"),
		"-p", "service=checkout", "-p", "dependency=payments")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"✓ check   confirm                  amplification = 4, expected > 1.3: met",
		`✓ ask     idempotent               "Do calls to payments carry an idempotency key?" answered "no"`,
		"- action  shed-first               skipped by the responder",
		"✓ action  retries-off              applied retries=off on checkout->payments (action ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		"[check] confirm\n    amplification{dependency=payments, service=checkout} > 1.3",
		"answer one of yes, no, unknown",
		"evidence      passed     checkout->payments: amplification 4", "lever: (normal) -> off by alice",
		`Type "checkout->payments" to confirm`,
		"playbook quick paused before step recovered",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	code, out, errOut = run("", false, "playbook", "status", "quick", "--playbooks", filepath.Join(dir, "pb"))
	if code != 0 || !strings.Contains(errOut, "next step recovered") ||
		!strings.Contains(out, "retries-off\taction\tpassed\talice\t") || !strings.Contains(out, "shed-first\taction\tskipped\talice\t") {
		t.Fatalf("status exit %d:\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = run("", false, "journal", "export", "--format", "jsonl")
	if code != 0 {
		t.Fatal(errOut)
	}
}
