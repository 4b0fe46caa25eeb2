package testenv

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartCluster runs a Redis Cluster of masters redis-server processes
// (--cluster-enabled, no replicas), the 16384 slots split evenly between
// them, and returns their addresses once every node reports the cluster
// ok and knows every other one. They stop when the test ends.
func StartCluster(t testing.TB, masters int) []string {
	t.Helper()
	Need(t, "redis-server")
	ctx := context.Background()
	addrs := make([]string, masters)
	clients := make([]*redis.Client, masters)
	for i := range masters {
		port := FreePort(t)
		dir := t.TempDir()
		cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
			"--appendonly", "no", "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--protected-mode", "no", "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		addrs[i] = "127.0.0.1:" + strconv.Itoa(port)
		clients[i] = redis.NewClient(&redis.Options{Addr: addrs[i]})
		t.Cleanup(func() { clients[i].Close() })
		waitFor(t, 10*time.Second, "cluster node "+addrs[i]+" did not start", func() bool { return clients[i].Ping(ctx).Err() == nil })
		from, to := i*16384/masters, (i+1)*16384/masters-1
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", from, to).Err(); err != nil {
			t.Fatalf("%s: CLUSTER ADDSLOTSRANGE %d %d: %v", addrs[i], from, to, err)
		}
	}
	for i := 1; i < masters; i++ {
		host, port, _ := strings.Cut(addrs[i], ":")
		if err := clients[0].ClusterMeet(ctx, host, port).Err(); err != nil {
			t.Fatal(err)
		}
	}
	known := "cluster_known_nodes:" + strconv.Itoa(masters)
	for _, c := range clients {
		waitFor(t, 30*time.Second, "the cluster did not become ok", func() bool {
			info := c.ClusterInfo(ctx).Val()
			return strings.Contains(info, "cluster_state:ok") && strings.Contains(info, known)
		})
	}
	return addrs
}
