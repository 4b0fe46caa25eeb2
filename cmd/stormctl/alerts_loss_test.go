package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// TestAlertsServeReportsJournalLoss: a running alerts serve remembers the
// furthest journal position, as flagd serve does; when the journal goes
// back it names the loss in /readyz and sets the gauge in /metrics.
func TestAlertsServeReportsJournalLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	ctx := context.Background()
	rs := testenv.StartRedis(t, testenv.RedisOptions{})
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("contexts:\n  t:\n    redis: {namespace: loss}\ncurrent-context: t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORMCTL_CONFIG", cfg)
	// Never dialled: nothing in this test needs evidence.
	t.Setenv("STORMCTL_PROMETHEUS_URL", "http://127.0.0.1:1")
	t.Setenv("STORMCTL_REDIS_URL", rs.URL("", ""))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("ALERTS_TOKEN", "token-of-alertmanager-0123")

	c := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer c.Close()
	s, err := controlplane.NewStore(ctx, c, "loss")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"checkout", "cart"} {
		l := lever.Lever{Kind: lever.Retries, Target: target, Value: "off", Actor: "alice", Reason: "storm", ExpiresAt: time.Now().Add(time.Hour)}
		if _, err := s.Apply(ctx, controlplane.ApplyRequest{Lever: l, Entry: journal.Entry{Actor: "alice"}}); err != nil {
			t.Fatal(err)
		}
	}
	srv := startAlertsServe(t)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + srv.MgmtAddr() + path)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The detector's first check (at start) has seen both entries once
	// /readyz answers; give it a second check to be sure, then lose them.
	time.Sleep(2500 * time.Millisecond)
	if code, r := get("/readyz"); code != http.StatusOK || strings.Contains(r, "LOST") {
		t.Fatalf("before the loss: HTTP %d %s", code, r)
	}
	if m := metricLine(get("/metrics")); m != "0" {
		t.Fatalf("stormctl_controlplane_journal_lost %q before the loss, want 0", m)
	}
	c.Del(ctx, s.Keys().Journal(), s.Keys().JournalHead())
	start := time.Now()
	for {
		code, r := get("/readyz")
		if code == http.StatusOK && strings.Contains(r, "LOST: journal went back: 2 entries") {
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("no loss in /readyz after 15s: HTTP %d %s", code, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if m := metricLine(get("/metrics")); m != "1" {
		t.Fatalf("stormctl_controlplane_journal_lost %q after the loss, want 1", m)
	}
}

// metricLine is the value of stormctl_controlplane_journal_lost in a
// /metrics answer, "" when absent.
func metricLine(_ int, body string) string {
	for l := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "stormctl_controlplane_journal_lost "); ok {
			return v
		}
	}
	return ""
}
