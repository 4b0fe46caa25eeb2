package tui

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// TestLossBannerAfterSentinelFailover: the failover the issue describes,
// with real processes — a primary, a replica and a sentinel; a burst of
// applies while the replica is paused and cut off; SIGKILL of the primary;
// the sentinel promotes the replica. A dashboard model watching through
// the redis+sentinel:// URL shows the banner, naming the entries that were
// reported unreplicated, within 10 s of the promotion.
func TestLossBannerAfterSentinelFailover(t *testing.T) {
	ctx := context.Background()
	primary, replica := testenv.StartReplicated(t)
	sentinel := testenv.StartSentinel(t, primary.Addr, true)
	store, err := controlplane.Open(ctx, config.Redis{URL: sentinel.URL(), Namespace: "tui", WaitTimeout: config.Duration(2 * time.Second)},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	apply := func(i int) *controlplane.Replication {
		t.Helper()
		now := time.Now()
		l := lever.Lever{Kind: lever.Retries, Target: "svc-" + strconv.Itoa(i), Value: "off", Actor: "alice", Reason: "storm",
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		res, err := store.Apply(ctx, controlplane.ApplyRequest{Lever: l})
		if err != nil {
			t.Fatal(err)
		}
		return res.Replication
	}
	for i := range 2 {
		if r := apply(i); !r.Replicated {
			t.Fatalf("healthy replica: %+v", r)
		}
	}
	det := controlplane.NewLossDetector(store, filepath.Join(t.TempDir(), "journal-mark.json"))
	h := newHarness(t, newClock(), Deps{Store: store, Journal: store.Journal(), Loss: det}, Options{Actor: "alice"}, 80, 24)

	replica.Pause()
	direct := redis.NewClient(&redis.Options{Addr: primary.Addr})
	defer direct.Close()
	direct.ClientKillByFilter(ctx, "TYPE", "replica")
	for i := 2; i < 5; i++ {
		if r := apply(i); !r.Unconfirmed() {
			t.Fatalf("apply %d to a primary without its replica: %+v", i, r)
		}
	}
	h.fire(lossTickMsg{}, 2*time.Second) // the dashboard has seen all five
	h.lacks("JOURNAL LOSS")

	primary.Kill()
	replica.Resume()
	promoted := sentinel.WaitMaster(t, replica.Addr, 30*time.Second)
	for !strings.Contains(h.view(), "JOURNAL LOSS") && time.Since(promoted) < 10*time.Second {
		h.fire(lossTickMsg{}, 2*time.Second)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("loss shown %v after the promotion", time.Since(promoted).Round(time.Millisecond))
	h.contains("JOURNAL LOSS", "3 entries after stream id", "stormctl journal sync", "Levers (2)")
	checkSize(t, h.view(), 80, 24)
}
