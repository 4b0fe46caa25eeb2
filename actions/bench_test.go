package actions

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// BenchmarkApply compares a guarded apply (every guard; evidence from a
// fake, so Prometheus is not measured) with the bare control-plane apply it
// ends in and with a PING, against a real redis-server in the same run. It
// reports each one's p50, p99 and Redis round trips, and both latencies as
// multiples of the PING's.
func BenchmarkApply(b *testing.B) {
	ctx := context.Background()
	s, store, rt := redisWorld(b, config.Policy{RateLimit: config.RateLimit{PerActor: 1 << 30, Overall: 1 << 30}})
	n := 0
	target := func() string { n++; return "svc" + strconv.Itoa(n) }
	bare := func() {
		l := lever.Lever{Kind: lever.Retries, Target: target(), Value: "off", Actor: "alice", Reason: "bench", ExpiresAt: time.Now().Add(time.Minute)}
		cur, ver, head, err := store.Get(ctx, l.Kind, l.Target)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := store.Apply(ctx, controlplane.ApplyRequest{Lever: l, Expected: ver, Current: cur, Head: head}); err != nil {
			b.Fatal(err)
		}
	}
	guarded := func() {
		if _, err := s.Apply(ctx, forcedSpec("alice", target())); err != nil {
			b.Fatal(err)
		}
	}
	testenv.BenchVsPing(b, store.Client(), rt, testenv.Op{Name: "bare", Run: bare}, testenv.Op{Name: "guarded", Run: guarded})
}
