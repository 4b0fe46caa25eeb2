package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// BenchmarkNodePropagation: `stormctl shed` through Main until a Node
// service on @openfeature/flagd-provider (in-process, and RPC) reads the new
// value, in the same run as stormctl's native Go provider observing the
// same write. The Node side evaluates every 2 ms, which bounds its
// resolution.
func BenchmarkNodePropagation(b *testing.B) {
	app := testenv.NodeApp(b, filepath.Join("..", "..", "flags", "flagd", "testdata", "node"))
	e := startFlagdServeWith(b, "redis: {namespace: fd}\npolicy:\n  rate-limit: {window: 1m, per-actor: 100000, overall: 100000}")
	rs := redis.NewClient(&redis.Options{Addr: e.redisAddr})
	b.Cleanup(func() { _ = rs.Close() })
	native := flags.NewProvider(rs, flags.Namespace("fd"), flags.ResyncInterval(time.Hour))
	if err := native.Init(openfeature.EvaluationContext{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(native.Shutdown)
	nodes := map[string]*nodeClient{
		"in-process": startNode(b, app, "in-process", e.srv.Addr("sync")),
		"rpc":        startNode(b, app, "rpc", e.srv.Addr("eval")),
	}
	changes := make(chan time.Time, 64)
	go func() {
		for ev := range native.EventChannel() {
			if ev.EventType == openfeature.ProviderConfigChange && slices.Contains(ev.FlagChanges, lever.ShedPercent) {
				changes <- time.Now()
			}
		}
	}()
	lat := map[string][]time.Duration{}
	round := 0
	for b.Loop() {
		round++
		pct := round%100 + 1
		start := time.Now()
		done := map[string]chan time.Duration{}
		for mode, c := range nodes {
			ch := make(chan time.Duration, 1)
			done[mode] = ch
			go func() {
				a := c.askUntil(b, lever.ShedPercent, float64(pct), "checkout")
				if a.Value != float64(pct) {
					b.Errorf("node %s: %v, want %d", mode, a.Value, pct)
				}
				ch <- time.Since(start)
			}()
		}
		for len(changes) > 0 {
			<-changes
		}
		stormctl(b, "shed", "checkout", fmt.Sprint(pct), "--ttl", "10m", "--reason", "bench", "--force", "--yes", "--supersede")
		select {
		case at := <-changes:
			lat["native"] = append(lat["native"], at.Sub(start))
		case <-time.After(10 * time.Second):
			b.Fatal("the native provider saw nothing")
		}
		for mode, ch := range done {
			lat[mode] = append(lat[mode], <-ch)
		}
	}
	for mode, ds := range lat {
		slices.Sort(ds)
		b.ReportMetric(testenv.PercentileMs(ds, 0.5), mode+"-p50-ms")
		b.ReportMetric(testenv.PercentileMs(ds, 0.99), mode+"-p99-ms")
	}
	b.ReportMetric(testenv.PercentileMs(lat["in-process"], 0.99)/testenv.PercentileMs(lat["native"], 0.99), "node-in-process/native-p99-x")
}
