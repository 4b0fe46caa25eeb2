package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// TestFlagdReportsJournalLoss: a running flagd serve remembers the furthest
// journal position; when the journal goes back it says so in /readyz and
// /metrics within seconds.
func TestFlagdReportsJournalLoss(t *testing.T) {
	ctx := context.Background()
	e := startFlagdServe(t)
	c := redis.NewClient(&redis.Options{Addr: e.redisAddr})
	defer c.Close()
	s, err := controlplane.NewStore(ctx, c, "fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"checkout", "cart"} {
		l := lever.Lever{Kind: lever.Retries, Target: target, Value: "off", Actor: "alice", Reason: "storm", ExpiresAt: time.Now().Add(time.Hour)}
		if _, err := s.Apply(ctx, controlplane.ApplyRequest{Lever: l, Entry: journal.Entry{Actor: "alice"}}); err != nil {
			t.Fatal(err)
		}
	}
	mgmt := "http://" + e.srv.Addr("management")
	get := func(path string) string {
		resp, err := http.Get(mgmt + path)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// Let the server see both entries, then lose them.
	time.Sleep(2500 * time.Millisecond)
	if r := get("/readyz"); strings.Contains(r, "LOST") {
		t.Fatalf("before: %s", r)
	}
	c.Del(ctx, s.Keys().Journal(), s.Keys().JournalHead())
	start := time.Now()
	for !strings.Contains(get("/readyz"), "LOST: journal went back: 2 entries") {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("no loss in /readyz after 10s: %s", get("/readyz"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if m := get("/metrics"); !strings.Contains(m, "stormctl_controlplane_journal_lost 1") {
		t.Fatal("metrics lack the loss")
	}
}
