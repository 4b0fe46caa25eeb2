package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/journal"
)

// The demo runs the control plane on an embedded Redis-protocol server
// (miniredis, gopher-lua): the scripts must run there too, and the journal
// must say that nobody was authenticated.
func TestEmbeddedServerWithoutACL(t *testing.T) {
	ctx := context.Background()
	m, s := embeddedStore(t)
	if _, ok := s.WhoAmI(ctx); ok {
		t.Fatal("miniredis claims ACL support")
	}
	res := apply(t, s, retriesLever("checkout", "off", time.Minute))
	if res.Entry.RedisUser != "" || res.Entry.RedisUserNote != journal.NoACLNote {
		t.Fatalf("entry user %q note %q", res.Entry.RedisUser, res.Entry.RedisUserNote)
	}
	if _, err := s.Release(ctx, ReleaseRequest{Current: res.Lever}); err != nil {
		t.Fatal(err)
	}
	short := apply(t, s, retriesLever("search", "off", time.Second))
	m.FastForward(2 * time.Second)
	expired, err := s.Reap(ctx, short.Lever.ExpiresAt.Add(time.Millisecond))
	if err != nil || len(expired) != 1 {
		t.Fatalf("reap on miniredis: %v %v", expired, err)
	}
	if n := verifyJournal(t, s); n != 4 {
		t.Fatalf("journal has %d entries, want 4", n)
	}
}

// embeddedStore is a store on a fresh miniredis.
func embeddedStore(t *testing.T) (*miniredis.Miniredis, *Store) {
	t.Helper()
	m := miniredis.RunT(t)
	s, err := NewStore(context.Background(), redis.NewClient(&redis.Options{Addr: m.Addr()}), "demo")
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}
