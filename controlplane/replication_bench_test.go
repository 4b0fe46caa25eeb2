package controlplane

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

// BenchmarkApplyWait measures an apply confirmed by one replica (WAIT in
// the script's pipeline) against the same apply without the wait, on the
// same primary with one replica, interleaved in one run, and reports p50
// and p99 of each and their ratios.
func BenchmarkApplyWait(b *testing.B) {
	ctx := context.Background()
	primary, _ := testenv.StartReplicated(b)
	one, zero := 1, 0
	waiting, plain := openAt(b, primary.Addr, &one), openAt(b, primary.Addr, &zero)
	i := 0
	run := func(s *Store) time.Duration {
		i++
		l := retriesLever("svc-"+strconv.Itoa(i%200)+"->db", "cap:"+strconv.Itoa(i%5+1), time.Hour)
		t := time.Now()
		cur, v, head, err := s.Get(ctx, l.Kind, l.Target)
		if err != nil {
			b.Fatal(err)
		}
		res, err := s.Apply(ctx, ApplyRequest{Lever: l, Expected: v, Current: cur, Head: head, Entry: journal.Entry{Incident: "INC-1"}})
		if err != nil {
			b.Fatal(err)
		}
		if s == waiting && !res.Replication.Replicated {
			b.Fatalf("not replicated: %+v", res.Replication)
		}
		return time.Since(t)
	}
	run(waiting)
	run(plain)
	var with, without []time.Duration
	for b.Loop() {
		with = append(with, run(waiting))
		without = append(without, run(plain))
	}
	p := func(ds []time.Duration, q float64) float64 {
		s := slices.Sorted(slices.Values(ds))
		return float64(s[min(len(s)-1, int(q*float64(len(s))))].Microseconds())
	}
	b.ReportMetric(p(with, 0.5), "wait-p50-µs")
	b.ReportMetric(p(with, 0.99), "wait-p99-µs")
	b.ReportMetric(p(without, 0.5), "nowait-p50-µs")
	b.ReportMetric(p(without, 0.99), "nowait-p99-µs")
	b.ReportMetric(p(with, 0.5)/p(without, 0.5), "p50-ratio")
	b.ReportMetric(p(with, 0.99)/p(without, 0.99), "p99-ratio")
}
