package tui

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// TestLossBannerAfterRestartFromOlderRDB: a real redis-server loses
// entries for real — SAVE, more acknowledged applies, SIGKILL, a restart
// from the older RDB — while a dashboard model watches; the banner names
// the missing range and `stormctl journal sync` within 10 s of the
// restart, and the 80×24 layout still fits.
func TestLossBannerAfterRestartFromOlderRDB(t *testing.T) {
	ctx := context.Background()
	r, store := realStore(t)
	applyN := func(from, to int) {
		for i := from; i < to; i++ {
			now := time.Now()
			l := lever.Lever{Kind: lever.Retries, Target: "svc-" + string(rune('a'+i)), Value: "off", Actor: "alice", Reason: "storm",
				CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if _, err := store.Apply(ctx, controlplane.ApplyRequest{Lever: l}); err != nil {
				t.Fatal(err)
			}
		}
	}
	applyN(0, 2)
	direct := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer direct.Close()
	if err := direct.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	saved, err := store.Position(ctx)
	if err != nil {
		t.Fatal(err)
	}
	det := controlplane.NewLossDetector(store, filepath.Join(t.TempDir(), "journal-mark.json"))
	h := newHarness(t, newClock(), Deps{Store: store, Journal: store.Journal(), Loss: det}, Options{Actor: "alice"}, 80, 24)
	applyN(2, 5)
	h.fire(lossTickMsg{}, 2*time.Second) // the dashboard has seen all five
	h.lacks("JOURNAL LOSS")

	r.Kill()
	r.Restart() // loads dump.rdb: the last three applies are gone
	restarted := time.Now()
	for !strings.Contains(h.view(), "JOURNAL LOSS") && time.Since(restarted) < 10*time.Second {
		h.fire(lossTickMsg{}, 2*time.Second)
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(restarted)
	// The levers are read again: the three lost ones are no longer listed.
	h.contains("JOURNAL LOSS", "3 entries after stream id "+saved.Pos, "stormctl journal sync", "Levers (2)")
	t.Logf("loss shown %v after the restart", took.Round(time.Millisecond))
	checkSize(t, h.view(), 80, 24)

	// The loss is on the record too, once, whoever noticed it.
	recs, err := store.Journal().Tail(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, rec := range recs {
		if e, err := journal.Parse(rec.Data); err == nil && e.Event == journal.ControlPlaneLost {
			lost++
		}
	}
	if lost != 1 {
		t.Fatalf("%d controlplane.lost entries, want 1", lost)
	}
	h.fire(lossTickMsg{}, 2*time.Second)
	h.contains("JOURNAL LOSS") // it stays until `journal sync` acknowledges it
}
