package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartReplicated runs a primary and one replica and waits until the
// replica is in sync.
func StartReplicated(t testing.TB) (primary, replica *Redis) {
	t.Helper()
	primary = StartRedis(t, RedisOptions{})
	replica = StartRedis(t, RedisOptions{ReplicaOf: primary.Addr})
	c := redis.NewClient(&redis.Options{Addr: primary.Addr})
	defer c.Close()
	waitFor(t, 10*time.Second, "replica did not connect", func() bool {
		info, _ := c.Info(context.Background(), "replication").Result()
		return strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online")
	})
	return primary, replica
}

// Sentinel is a running redis-sentinel monitoring one master as
// "mymaster", owned by one test.
type Sentinel struct {
	Addr   string
	Client *redis.SentinelClient
}

// StartSentinel runs a Sentinel monitoring master (host:port) with a quorum
// of one. With failover it declares the master down after a second and
// promotes a replica, and is returned once it has found one.
func StartSentinel(t testing.TB, master string, failover bool) *Sentinel {
	t.Helper()
	Need(t, "redis-server")
	dir := t.TempDir()
	port := strconv.Itoa(FreePort(t))
	host, mport, _ := strings.Cut(master, ":")
	body := "port " + port + "\nbind 127.0.0.1\ndir " + dir + "\nsentinel monitor mymaster " + host + " " + mport + " 1\n"
	if failover {
		body += "sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 5000\n"
	}
	conf := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	s := &Sentinel{Addr: "127.0.0.1:" + port}
	s.Client = redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { s.Client.Close() })
	ctx := context.Background()
	waitFor(t, 10*time.Second, "sentinel did not start", func() bool {
		return s.Client.GetMasterAddrByName(ctx, "mymaster").Err() == nil
	})
	if failover {
		waitFor(t, 10*time.Second, "sentinel did not find the replica", func() bool {
			r, err := s.Client.Replicas(ctx, "mymaster").Result()
			return err == nil && len(r) == 1
		})
	}
	return s
}

// URL is the redis+sentinel:// URL of the monitored master.
func (s *Sentinel) URL() string { return "redis+sentinel://" + s.Addr + "/mymaster" }

// WaitMaster waits until the Sentinel names addr as the master and returns
// when it first did.
func (s *Sentinel) WaitMaster(t testing.TB, addr string, within time.Duration) time.Time {
	t.Helper()
	waitFor(t, within, "sentinel did not promote "+addr, func() bool {
		a, err := s.Client.GetMasterAddrByName(context.Background(), "mymaster").Result()
		return err == nil && len(a) == 2 && a[0]+":"+a[1] == addr
	})
	return time.Now()
}

func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}
