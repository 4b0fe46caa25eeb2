package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// startSentinel runs a Sentinel that monitors master as "mymaster".
func startSentinel(t *testing.T, master string) string {
	dir := t.TempDir()
	port := strconv.Itoa(testenv.FreePort(t))
	host, mport, _ := strings.Cut(master, ":")
	conf := filepath.Join(dir, "sentinel.conf")
	body := "port " + port + "\nbind 127.0.0.1\ndir " + dir + "\nsentinel monitor mymaster " + host + " " + mport + " 1\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	runServer(t, conf, "--sentinel")
	addr := "127.0.0.1:" + port
	c := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer c.Close()
	waitUntil(t, "sentinel did not start", func() bool {
		return c.GetMasterAddrByName(context.Background(), "mymaster").Err() == nil
	})
	return addr
}

func TestSentinelMode(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	sentinel := startSentinel(t, r.Addr)
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
