package controlplane

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

// runServer starts redis-server with args for the test's lifetime; for
// modes testenv does not start (cluster, sentinel).
func runServer(t *testing.T, args ...string) {
	testenv.Need(t, "redis-server")
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// waitUntil polls cond for up to ten seconds.
func waitUntil(t testing.TB, what string, cond func() bool) {
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// startClusterNode runs a one-node Redis Cluster owning every slot. Redis
// refuses a script whose keys hash to different slots even on one node,
// so this proves the schema's hash tag keeps every script on one slot.
func startClusterNode(t *testing.T) string {
	port := strconv.Itoa(testenv.FreePort(t))
	dir := t.TempDir()
	runServer(t, "--port", port, "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no",
		"--cluster-enabled", "yes", "--cluster-config-file", dir+"/nodes.conf", "--protected-mode", "no")
	addr := "127.0.0.1:" + port
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	waitUntil(t, "cluster node did not start", func() bool { return c.Ping(ctx).Err() == nil })
	if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "cluster did not become ok", func() bool {
		return strings.Contains(c.ClusterInfo(ctx).Val(), "cluster_state:ok")
	})
	return addr
}

func TestClusterMode(t *testing.T) {
	ctx := context.Background()
	addr := startClusterNode(t)
	s, err := Open(ctx, config.Redis{URL: "redis://" + addr + "?cluster=true", Namespace: "c"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.Client().(*redis.ClusterClient); !ok {
		t.Fatalf("client is %T, want a cluster client", s.Client())
	}
	short := apply(t, s, retriesLever("checkout", "off", 300*time.Millisecond))
	res := apply(t, s, retriesLever("search", "cap:2", time.Hour))
	if _, err := s.Extend(ctx, ExtendRequest{Current: res.Lever, ExpiresAt: time.Now().Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if expired, err := s.Reap(ctx, time.Now()); err != nil || len(expired) != 1 || expired[0].ActionID != short.Lever.ActionID {
		t.Fatalf("reap: %v %v", expired, err)
	}
	if _, err := s.Append(ctx, journal.Entry{Event: journal.Note, Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	if ls, err := s.Levers(ctx); err != nil || len(ls) != 1 {
		t.Fatalf("levers: %v %v", ls, err)
	}
	if n := verifyJournal(t, s); n != 5 {
		t.Fatalf("journal has %d entries, want 5", n)
	}
}
