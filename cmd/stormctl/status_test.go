package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// runCLI runs stormctl with env set for this test and returns stdout,
// stderr and the exit code.
func runCLI(t *testing.T, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	t.Setenv("STORMCTL_CONFIG", os.DevNull) // no config file
	t.Setenv("STORMCTL_ACTOR", "alice")
	for k, v := range env {
		t.Setenv(k, v)
	}
	io, _, out, errOut := iostreams.Test()
	code := Main(args, io)
	return out.String(), errOut.String(), code
}

// seededStore opens a store on a fresh server and applies two levers.
func seededStore(t *testing.T) (*testenv.Redis, *controlplane.Store) {
	t.Helper()
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	s, err := controlplane.Open(ctx, config.Redis{URL: r.URL("", "")}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, l := range []lever.Lever{
		{Kind: lever.Retries, Target: "checkout->payments", Value: "off", Actor: "alice", Reason: "amplification 3.2", Incident: "INC-7", ExpiresAt: time.Now().Add(30 * time.Minute)},
		{Kind: lever.Breaker, Target: "payments", Value: "open", Actor: "bob", Reason: "p99 4s", Incident: "INC-7", ExpiresAt: time.Now().Add(2 * time.Hour)},
	} {
		if _, err := s.Apply(ctx, controlplane.ApplyRequest{Lever: l}); err != nil {
			t.Fatal(err)
		}
	}
	return r, s
}

func TestStatus(t *testing.T) {
	ctx := context.Background()
	r, s := seededStore(t)
	// Two live provider instances; one has applied the retries lever.
	c, k := s.Client(), s.Keys()
	now := float64(time.Now().UnixMilli())
	c.ZAdd(ctx, k.Instances(), redis.Z{Score: now, Member: "pod-1"}, redis.Z{Score: now, Member: "pod-2"}, redis.Z{Score: now - float64(time.Hour.Milliseconds()), Member: "gone"})
	// As flags/ writes them: pod-1 applied the retries lever; pod-2 is live
	// but has not caught up; "gone" stopped, so its ack hash expired.
	c.HSet(ctx, k.Ack("pod-1"), "_seen", now, "retries:checkout->payments", "1", "breaker:payments", "0")
	c.HSet(ctx, k.Ack("pod-2"), "_seen", now)
	env := map[string]string{"STORMCTL_REDIS_URL": r.URL("", "")}

	out, stderr, code := runCLI(t, env, "status", "-o", "json")
	if code != 0 {
		t.Fatalf("status exit %d: %s", code, stderr)
	}
	var st statusOutput
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Instances != 2 || len(st.Levers) != 2 {
		t.Fatalf("status: %+v", st)
	}
	ret, brk := st.Levers[0], st.Levers[1]
	if ret.Kind != lever.Retries || ret.SeenBy != 1 || ret.Actor != "alice" || ret.Incident != "INC-7" ||
		ret.SecondsLeft < 29*60 || ret.SecondsLeft > 30*60 || brk.SeenBy != 0 {
		t.Fatalf("levers: %+v", st.Levers)
	}

	out, _, code = runCLI(t, env, "status")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("table: %q", out)
	}
	cells := strings.Split(lines[0], "\t")
	// Time left rounds up: a 30 m lever read a moment later shows 30m0s,
	// or less on a slow machine, never more.
	left, err := time.ParseDuration(cells[6])
	if cells[0] != "retries" || cells[2] != "off" || err != nil || left < 29*time.Minute || left > 30*time.Minute || cells[7] != "1/2" {
		t.Fatalf("row %q", cells)
	}
}

func TestStatusWhenRedisIsDown(t *testing.T) {
	port := strconv.Itoa(testenv.FreePort(t))
	_, stderr, code := runCLI(t, map[string]string{"STORMCTL_REDIS_URL": "redis://ops:hunter2@127.0.0.1:" + port}, "status")
	if code != exit.Error || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "127.0.0.1:"+port) ||
		strings.Contains(stderr, "hunter2") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = runCLI(t, map[string]string{"STORMCTL_REDIS_URL": ""}, "status")
	if code != exit.Usage || !strings.Contains(stderr, "--redis-url") {
		t.Fatalf("no URL: exit %d, stderr %q", code, stderr)
	}
}

func TestLeftIsReadable(t *testing.T) {
	for d, want := range map[time.Duration]string{-time.Second: "expiring", 90 * time.Second: "1m30s", 65 * time.Minute: "1h05m"} {
		if got := left(d); got != want {
			t.Errorf("left(%v) = %q, want %q", d, got, want)
		}
	}
}
