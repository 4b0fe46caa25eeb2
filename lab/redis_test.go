package lab

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// miniredis on its own expires nothing until told that time has passed,
// unlike redis-server; the lab's embedded server runs TTLs on the wall
// clock: a key given an absolute expiry (PXAT, as levers are written) is
// there until that instant and gone from it.
func TestEmbeddedRedisExpiresOnTheWallClock(t *testing.T) {
	ctx := context.Background()
	plain := miniredis.RunT(t)
	pc := redis.NewClient(&redis.Options{Addr: plain.Addr()})
	defer pc.Close()
	e, err := StartEmbeddedRedis("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ec := redis.NewClient(&redis.Options{Addr: e.Addr})
	defer ec.Close()

	at := time.Now().Add(300 * time.Millisecond).Truncate(time.Millisecond)
	for _, c := range []*redis.Client{pc, ec} {
		if err := c.SetArgs(ctx, "lever", "x", redis.SetArgs{ExpireAt: at}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Until(at) - 50*time.Millisecond)
	if gone := ec.Exists(ctx, "lever").Val() == 0; gone && time.Now().Before(at) {
		t.Fatal("the embedded server expired a key early")
	}
	time.Sleep(time.Until(at) + time.Millisecond)
	if ec.Exists(ctx, "lever").Val() != 0 {
		t.Error("the embedded server kept a key past its expiry")
	}
	if pc.Exists(ctx, "lever").Val() != 1 {
		t.Error("plain miniredis expired a key by itself: EmbeddedRedis's clock may no longer be needed")
	}
}

func TestEmbeddedRedisRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "example.com:6379", "nohost"} {
		if e, err := StartEmbeddedRedis(addr); err == nil {
			e.Close()
			t.Errorf("StartEmbeddedRedis(%q) accepted a non-loopback address", addr)
		}
	}
}
