package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

func TestSentinelMode(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	sentinel := testenv.StartSentinel(t, r.Addr, false).Addr
	s, err := Open(ctx, config.Redis{URL: "redis+sentinel://" + sentinel + "/mymaster", Namespace: "s"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := apply(t, s, retriesLever("checkout", "off", time.Minute))
	// The write went to the master the sentinel named.
	direct := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer direct.Close()
	if direct.Exists(ctx, s.Keys().Lever(lever.Retries, "checkout")).Val() != 1 || res.Version != 1 {
		t.Fatal("lever not on the monitored master")
	}
	verifyJournal(t, s)
}
