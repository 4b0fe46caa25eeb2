package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
)

// One holder at a time; only the holder frees or settles a claim; it expires.
func TestClaims(t *testing.T) {
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	ctx := context.Background()
	s, err := Open(ctx, config.Redis{URL: r.URL("", ""), Namespace: "claims"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ok, err := s.Claim(ctx, "e", "a", time.Minute); !ok || err != nil {
		t.Fatalf("first claim: %v %v", ok, err)
	}
	if ok, err := s.Claim(ctx, "e", "b", time.Minute); ok || err != nil {
		t.Fatalf("second claim: %v %v", ok, err)
	}
	if err := s.Unclaim(ctx, "e", "b"); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Claimed(ctx, "e"); v != "a" {
		t.Fatalf("a non-holder freed the claim: %q", v)
	}
	if err := s.Unclaim(ctx, "e", "a"); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Claimed(ctx, "e"); v != "" {
		t.Fatalf("holder's unclaim left %q", v)
	}
	// Settle replaces only the caller's own claim, with the new TTL.
	if ok, _ := s.Claim(ctx, "s", "lease:a", time.Minute); !ok {
		t.Fatal("claim s")
	}
	if ok, err := s.Settle(ctx, "s", "lease:b", "done:b", time.Hour); ok || err != nil {
		t.Fatalf("a non-holder settled: %v %v", ok, err)
	}
	if ok, err := s.Settle(ctx, "s", "lease:a", "done:a", time.Hour); !ok || err != nil {
		t.Fatalf("holder's settle: %v %v", ok, err)
	}
	if v, _ := s.Claimed(ctx, "s"); v != "done:a" {
		t.Fatalf("settled claim holds %q", v)
	}
	if ttl := s.client.PTTL(ctx, s.keys.Claim("s")).Val(); ttl < 59*time.Minute {
		t.Fatalf("settled claim's TTL %s, want the hour it was settled for", ttl)
	}
	if ok, _ := s.Claim(ctx, "x", "a", 50*time.Millisecond); !ok {
		t.Fatal("claim x")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ok, _ := s.Claim(ctx, "x", "b", time.Minute); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("claim did not expire")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
