package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/testenv"
)

// flagd serve names the namespace it serves as the CLI does: a config
// without one is the namespace "default", not "".
func TestFlagdServeLogsDefaultNamespace(t *testing.T) {
	rs := testenv.StartRedis(t, testenv.RedisOptions{})
	t.Setenv("STORMCTL_CONFIG", "")
	t.Setenv("STORMCTL_REDIS_URL", rs.URL("", ""))
	t.Setenv("STORMCTL_ACTOR", "alice")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	started := make(chan context.CancelFunc, 1)
	flagdServeStarted = func(_ *flagd.Server, c context.CancelFunc) { started <- c }
	defer func() { flagdServeStarted = nil }()
	io, _, _, errOut := iostreams.Test()
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"flagd", "serve", "--sync-addr", "127.0.0.1:0", "--eval-addr", "127.0.0.1:0",
			"--ofrep-addr", "127.0.0.1:0", "--management-addr", "127.0.0.1:0"}, io)
	}()
	select {
	case stop := <-started:
		log := errOut.String()
		stop()
		if code := <-done; code != 0 {
			t.Errorf("flagd serve exited %d", code)
		}
		if !strings.Contains(log, `(namespace "default")`) {
			t.Fatalf("flagd serve said:\n%s", log)
		}
	case code := <-done:
		t.Fatalf("flagd serve exited %d:\n%s", code, errOut)
	case <-time.After(30 * time.Second):
		t.Fatal("flagd serve did not start")
	}
}

// query run shows a control character in a label the way every other
// command does — escaped as \u001b by internal/sanitize — on a table and
// in a pipe, not as U+FFFD.
func TestQueryRunEscapesLabelsLikeEveryCommand(t *testing.T) {
	end := fixtureEnd()
	om := testenv.NewOpenMetrics()
	start := end.Add(-fixtureStep * (fixtureSamples - 1))
	pool := "ht\x1b[2Jtp"
	labels := map[string]string{"service": "checkout", "pool": pool}
	om.Gauge("stormctl_pool_in_use", labels, start, fixtureStep, profile(40, 196))
	om.Gauge("stormctl_pool_capacity", labels, start, fixtureStep, profile(200, 200))
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: om.String()})
	env := map[string]string{"STORMCTL_PROMETHEUS_URL": prom.URL, "XDG_CACHE_HOME": t.TempDir(), "XDG_CONFIG_HOME": t.TempDir()}
	for _, tty := range []bool{false, true} {
		t.Setenv("STORMCTL_CONFIG", "")
		io, _, out, errOut := iostreams.Test()
		io.SetTTY(false, tty)
		for k, v := range env {
			t.Setenv(k, v)
		}
		t.Setenv("STORMCTL_ACTOR", "alice")
		if code := Main([]string{"query", "run", "pool_saturation", "--service", "checkout"}, io); code != 0 {
			t.Fatalf("tty %v: exit %d: %s", tty, code, errOut)
		}
		got := out.String()
		if !strings.Contains(got, `pool=ht\u001b[2Jtp`) || strings.Contains(got, "\uFFFD") || strings.Contains(got, "\x1b") {
			t.Errorf("tty %v: query run printed:\n%q", tty, got)
		}
	}
}
