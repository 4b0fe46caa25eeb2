package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// run runs stormctl as actor, with no terminal, and returns its stdout,
// stderr and exit code.
func (e *actionEnv) run(actor string, args ...string) (string, string, int) {
	e.t.Helper()
	for k, v := range e.env {
		e.t.Setenv(k, v)
	}
	e.t.Setenv("STORMCTL_ACTOR", actor)
	io, _, out, errOut := iostreams.Test()
	code := Main(args, io)
	return out.String(), errOut.String(), code
}

func (e *actionEnv) expect(code int, actor string, args ...string) (map[string]any, string) {
	e.t.Helper()
	out, errOut, got := e.run(actor, args...)
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

// journalEntries reads the whole journal through `journal tail -o json`.
func (e *actionEnv) journalEntries() []journal.Entry {
	e.t.Helper()
	out, errOut, code := e.run("alice", "journal", "tail", "-n", "1000", "-o", "json")
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
