package controlplane

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

// BenchmarkApply measures an uncontended apply as the actions layer makes
// it (one snapshot read of the lever, version, head, rate budget and
// incidents; one script that spends the budget, writes, journals and
// publishes) against a real redis-server, beside a plain PING on the same
// connection pool as the baseline.
func BenchmarkApply(b *testing.B) {
	ctx := context.Background()
	s := openStore(b, testenv.StartRedis(b, testenv.RedisOptions{}), "", "")
	rt := &testenv.RoundTrips{}
	s.Client().AddHook(rt)
	ev := []journal.Evidence{{Query: "amplification", Pack: "stormctl", Value: 3.2, Threshold: "> 1.3", Status: "firing", Time: time.Now()}}
	charge := &RateCharge{Actor: "alice", Limit: RateLimit{Window: time.Minute}}
	i := 0
	testenv.BenchVsPing(b, s.Client(), rt, testenv.Op{Name: "apply", Run: func() {
		i++
		l := retriesLever("svc-"+strconv.Itoa(i%200)+"->db", "cap:"+strconv.Itoa(i%5+1), time.Hour)
		snap, err := s.Snapshot(ctx, SnapshotRequest{Kind: l.Kind, Targets: []string{l.Target}, Rate: charge,
			Records: []RecordRef{{Collection: "incidents"}}})
		if err != nil {
			b.Fatal(err)
		}
		cur := snap.Levers[l.Target]
		e := journal.Entry{TTL: journal.Duration(time.Hour), Evidence: ev, Incident: "INC-1"}
		if _, err := s.Apply(ctx, ApplyRequest{Lever: l, Expected: cur.Version, Current: cur.Lever, Head: snap.Head, Entry: e, Rate: charge}); err != nil {
			b.Fatal(err)
		}
	}})
}
