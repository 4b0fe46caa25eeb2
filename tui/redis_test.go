package tui

import (
	"context"
	"testing"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// Against a real redis-server that dies and comes back: the levers are
// marked stale while it is down (and stay listed), the error is shown,
// and once it answers again the levers are read afresh and the error is
// cleared.
func TestLeversStaleWhileRedisDown(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	store, err := controlplane.Open(ctx, config.Redis{URL: r.URL("", ""), Namespace: "tui"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	now := time.Now()
	l := lever.Lever{Kind: lever.Retries, Target: "checkout->payments", Value: "off", Actor: "alice", Reason: "amplification 4x",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if _, err := store.Apply(ctx, controlplane.ApplyRequest{Lever: l}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, newClock(), Deps{Store: store}, Options{Context: "lab", Actor: "alice"}, 80, 24)
	h.contains("retries checkout->payments=off")
	h.lacks("STALE")

	r.Kill()
	h.fire(acksTickMsg{}, 5*time.Second)
	h.send(h.m.readLevers()()) // the read a lost change feed makes
	h.contains("Levers (1) STALE", "STALE since", "retries checkout->payments=off", "✗ levers:")

	r.Restart()
	deadline := time.Now().Add(20 * time.Second)
	for h.m.levers.Stale() && time.Now().Before(deadline) {
		h.fire(acksTickMsg{}, 5*time.Second) // the client reconnects on its own
		time.Sleep(100 * time.Millisecond)
	}
	// The server restarted empty (SIGKILL, no persistence): the fresh read
	// replaces the stale list.
	h.lacks("STALE", "✗ levers:", "retries checkout->payments=off")
	h.contains("levers: reconnected", "Levers (0)")
	checkSize(t, h.view(), 80, 24)
}
