package controlplane

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// TestAbsentAtExpiresAt holds the lever key in a real redis-server past its
// expires_at, as Redis does within the millisecond of a PXAT expiry, so the
// boundary is hit every run instead of by chance: every reader must already
// say absent.
func TestAbsentAtExpiresAt(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	s := openStore(t, r, "", "")
	res := apply(t, s, retriesLever("search", "off", time.Hour))
	l := *res.Lever
	l.ExpiresAt = time.Now().Truncate(time.Millisecond)
	raw, _ := json.Marshal(l)
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	// The key itself stays for a minute: only expires_at says it is over.
	if err := c.Set(ctx, s.Keys().Lever(lever.Retries, "search"), raw, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for time.Now().Before(l.ExpiresAt) {
		time.Sleep(time.Millisecond)
	}
	if got, ver, _, err := s.Get(ctx, lever.Retries, "search"); err != nil || got != nil || ver != 1 {
		t.Fatalf("Get at expires_at: %+v version %d %v, want absent at version 1", got, ver, err)
	}
	if ls, err := s.Levers(ctx); err != nil || len(ls) != 0 {
		t.Fatalf("Levers at expires_at: %+v %v, want none", ls, err)
	}
	snap, err := s.Snapshot(ctx, SnapshotRequest{Kind: lever.Retries, Targets: []string{"search"}})
	if err != nil || snap.Levers["search"].Lever != nil {
		t.Fatalf("Snapshot at expires_at: %+v %v", snap, err)
	}
}
