package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/queries"
)

// A lab served in real time prints the two URLs another terminal needs,
// and a lever pulled there with the ordinary shortcut changes the running
// simulation within a couple of scrape intervals.
func TestLabServeAnotherTerminal(t *testing.T) {
	t.Setenv("STORMCTL_CONFIG", os.DevNull) // no config file
	t.Setenv("STORMCTL_JOURNAL_PENDING", filepath.Join(t.TempDir(), "pending.jsonl"))
	errR, errW := io.Pipe()
	var out bytes.Buffer
	f := newFactory(&iostreams.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: errW}, os.Getenv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runLab(ctx, f, &labRunOptions{scenario: "../../lab/testdata/parity.yaml", speed: "realtime", serve: "127.0.0.1:0", seed: 1})
		errW.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("lab run: %v", err)
		}
	}()
	env := map[string]string{}
	lines := bufio.NewScanner(errR)
	for len(env) < 2 && lines.Scan() {
		if k, v, ok := strings.Cut(lines.Text(), "="); ok && strings.HasPrefix(k, "STORMCTL_") {
			env[k] = v
		}
	}
	go func() { _, _ = io.Copy(io.Discard, errR) }()
	if env["STORMCTL_PROMETHEUS_URL"] == "" || !strings.HasPrefix(env["STORMCTL_REDIS_URL"], "redis://127.0.0.1:") {
		t.Fatalf("the lab printed %v", env)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	prom, err := queries.NewClient(config.Prometheus{URL: env["STORMCTL_PROMETHEUS_URL"]}, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	refused := `sum(stormctl_attempts_total{outcome="breaker_open"}) or vector(0)`
	waitFor(t, prom, `count(stormctl_requests_total)`, 5*time.Second)
	code, stdout, stderr := run(t, "breaker", "open", "checkout->payments", "--ttl", "5m", "--reason", "rehearsal",
		"--force", "--yes", "--actor", "alice", "-o", "json")
	if code != 0 {
		t.Fatalf("breaker open from another terminal: exit %d\n%s\n%s", code, stdout, stderr)
	}
	applied := time.Now()
	waitFor(t, prom, refused, 3*time.Second)
	t.Logf("breaker-refused attempts in the lab %s after the apply returned", time.Since(applied).Round(time.Millisecond))
}

// waitFor polls expr at the lab's present until it is positive.
func waitFor(t *testing.T, c *queries.Client, expr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		v, _, _, err := c.Query(context.Background(), expr, time.Time{})
		if vec, ok := v.(model.Vector); err == nil && ok && len(vec) == 1 && vec[0].Value > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not positive within %s: %v %v", expr, within, v, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
