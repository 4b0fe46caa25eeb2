package tui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/queries"
	"github.com/stormctl/stormctl/tui/components/signals"
)

// countingProxy stands in front of a Prometheus and counts the requests
// and the response bytes as they go on the wire (gzip included).
type countingProxy struct {
	URL             string
	requests, bytes atomic.Int64
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return w.ResponseWriter.Write(p)
}

func newCountingProxy(b testing.TB, target string) *countingProxy {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	cp := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cp.requests.Add(1)
		rp.ServeHTTP(countingWriter{w, &cp.bytes}, r)
	}))
	b.Cleanup(srv.Close)
	cp.URL = srv.URL
	return cp
}

// fleetBench is the dashboard on one fleet, refreshed through a counting proxy.
type fleetBench struct {
	h      *harness
	proxy  *countingProxy
	runner *queries.Runner
}

// Where a fleet bench's Prometheus answers from (see BenchmarkFleetScale).
const (
	fromRaw        = "raw"
	fromRecorded   = "recorded"
	fromFleetRules = "fleet-rules"
)

func newFleetBench(b *testing.B, services, top int, from string) *fleetBench {
	_, prom := fleetWorld(b, services)
	recorded := from != fromRaw
	if recorded {
		rules, err := catalog(b).Rules(queries.DefaultPack, queries.Params{})
		if err != nil {
			b.Fatal(err)
		}
		stages := []string{string(rules)}
		if from == fromFleetRules {
			fleet, err := catalog(b).FleetRules(queries.DefaultPack, top)
			if err != nil {
				b.Fatal(err)
			}
			stages = append(stages, string(fleet))
		}
		start := t0.Add(-testenv.FleetStep * (testenv.FleetSamples - 1))
		blocks := prom.StagedRuleBlocks(b, stages, start, t0.Add(testenv.FleetStep), testenv.FleetStep)
		prom.Stop()
		prom = testenv.StartPrometheus(b, testenv.PromOptions{Blocks: blocks})
	}
	fb := &fleetBench{proxy: newCountingProxy(b, prom.URL)}
	c, err := queries.NewClient(config.Prometheus{URL: fb.proxy.URL}, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	fb.runner = queries.NewRunner(c, queries.RunnerOptions{Timeout: 60 * time.Second})
	if from == fromFleetRules { // measured from the fleet rules, not from their fallback
		f, err := catalog(b).RenderRecordedFleet("amplification", "", top)
		if err != nil {
			b.Fatal(err)
		}
		res := queries.SplitFleet(f, fb.runner.Run(context.Background(), f.Request("", t0)).Series)
		if len(res.Worst) == 0 || res.Worst[0].Labels["__name__"] != "stormctl:amplification:fleet_top" {
			b.Fatalf("fleet rules not read: %v", res.Worst)
		}
	}
	plan := signals.Plan{Catalog: catalog(b), Top: top, Recorded: recorded}
	fb.h = newHarness(b, newClock(), Deps{Querier: fb.runner}, Options{Signals: plan}, 200, 60)
	fb.h.until("the first refresh", func() bool { return len(fb.h.m.signals.Panels()) > 0 })
	return fb
}

// cycleStats are one refresh cycle's costs; view and viewAlloc are per frame.
type cycleStats struct {
	refresh, view               time.Duration
	requests, bytes             int64
	refreshAlloc, updateAlloc   uint64
	viewAlloc, pointsKept, rows int
}

func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

const viewsPerCycle = 20

// cycle is one refresh as the dashboard does it: the requests, the
// results into panels, and one frame drawn.
func (fb *fleetBench) cycle(ctx context.Context) cycleStats {
	m := fb.h.m
	var st cycleStats
	reqs, at := m.requests(t0), t0
	r0, b0, a0 := fb.proxy.requests.Load(), fb.proxy.bytes.Load(), allocated()
	start := time.Now()
	results := fb.runner.RunAll(ctx, reqs)
	st.refresh = time.Since(start)
	st.requests, st.bytes = fb.proxy.requests.Load()-r0, fb.proxy.bytes.Load()-b0
	a1 := allocated()
	st.refreshAlloc = a1 - a0
	m.refreshing = true
	m.Update(signalsMsg{results: results, at: at, gen: m.gen})
	a2 := allocated()
	st.updateAlloc = a2 - a1
	// Frames are drawn far more often than refreshes: time several.
	start = time.Now()
	for range viewsPerCycle {
		_ = m.View()
	}
	st.view = time.Since(start) / viewsPerCycle
	st.viewAlloc = int(allocated()-a2) / viewsPerCycle
	for _, p := range m.signals.Panels() {
		st.pointsKept += len(p.Points)
	}
	st.rows = len(m.signals.Panels())
	return st
}

// BenchmarkFleetScale refreshes the fleet view on 10 services and on
// 1,000 (×3 dependencies each) in the same iteration, against real
// Prometheus servers, and reports the 1,000-service costs as ratios of
// the 10-service ones: refresh wall time, bytes received, allocations of
// the refresh and of the panel update, View() time and allocations.
// Targets: ≤ 2× at 100× the fleet, and the same requests per refresh.
// "recorded" ranks the series of the catalogue's recording rules,
// backfilled with promtool, as dash --recorded does without the fleet
// rules; "fleet-rules" reads the reduction those rules recorded
// (query export --format rules --top 20), as dash --recorded does with them.
func BenchmarkFleetScale(b *testing.B) {
	for _, from := range []string{fromRaw, fromRecorded, fromFleetRules} {
		b.Run(from, func(b *testing.B) { benchFleetScale(b, from) })
	}
}

// benchFleetScale is BenchmarkFleetScale answered from the raw metrics,
// the recording rules' series or their fleet reduction.
func benchFleetScale(b *testing.B, from string) {
	small := newFleetBench(b, 10, signals.DefaultTop, from)
	large := newFleetBench(b, 1000, signals.DefaultTop, from)
	ctx := context.Background()
	var s, l cycleStats
	add := func(acc *cycleStats, c cycleStats) {
		acc.refresh += c.refresh
		acc.view += c.view
		acc.requests += c.requests
		acc.bytes += c.bytes
		acc.refreshAlloc += c.refreshAlloc
		acc.updateAlloc += c.updateAlloc
		acc.viewAlloc += c.viewAlloc
		acc.pointsKept, acc.rows = c.pointsKept, c.rows
	}
	for b.Loop() {
		add(&s, small.cycle(ctx))
		add(&l, large.cycle(ctx))
	}
	n := float64(b.N)
	ratio := func(a, b float64) float64 { return a / max(b, 1e-9) }
	b.ReportMetric(float64(s.requests)/n, "requests/refresh@10")
	b.ReportMetric(float64(l.requests)/n, "requests/refresh@1000")
	b.ReportMetric(s.refresh.Seconds()*1e3/n, "refresh-ms@10")
	b.ReportMetric(ratio(l.refresh.Seconds(), s.refresh.Seconds()), "refresh-x")
	b.ReportMetric(float64(s.bytes)/n, "rx-B@10")
	b.ReportMetric(ratio(float64(l.bytes), float64(s.bytes)), "rx-x")
	b.ReportMetric(ratio(float64(l.refreshAlloc), float64(s.refreshAlloc)), "refresh-alloc-x")
	b.ReportMetric(ratio(float64(l.updateAlloc), float64(s.updateAlloc)), "update-alloc-x")
	b.ReportMetric(s.view.Seconds()*1e6/n, "view-us@10")
	b.ReportMetric(ratio(l.view.Seconds(), s.view.Seconds()), "view-x")
	b.ReportMetric(ratio(float64(l.viewAlloc), float64(s.viewAlloc)), "view-alloc-x")
	b.ReportMetric(float64(l.pointsKept), "points-kept@1000")
	b.ReportMetric(float64(l.rows), "rows@1000")
	if s.requests != l.requests {
		b.Errorf("requests per refresh grew with the fleet: %d at 10 services, %d at 1000", s.requests/int64(b.N), l.requests/int64(b.N))
	}
}

// BenchmarkFleetVsEverySeries is the reduction itself at 1,000 services:
// one refresh of the fleet view against one of the view that asks for
// every series (--top 0), the baseline, in the same iteration.
func BenchmarkFleetVsEverySeries(b *testing.B) {
	fleet := newFleetBench(b, 1000, signals.DefaultTop, fromRaw)
	every := newFleetBench(b, 1000, 0, fromRaw)
	ctx := context.Background()
	var f, e cycleStats
	for b.Loop() {
		fc, ec := fleet.cycle(ctx), every.cycle(ctx)
		f.refresh, e.refresh = f.refresh+fc.refresh, e.refresh+ec.refresh
		f.bytes, e.bytes = f.bytes+fc.bytes, e.bytes+ec.bytes
		f.view, e.view = f.view+fc.view, e.view+ec.view
		f.updateAlloc, e.updateAlloc = f.updateAlloc+fc.updateAlloc, e.updateAlloc+ec.updateAlloc
		f.pointsKept, e.pointsKept = fc.pointsKept, ec.pointsKept
	}
	b.ReportMetric(f.refresh.Seconds()/e.refresh.Seconds(), "refresh-fleet/every")
	b.ReportMetric(float64(f.bytes)/float64(e.bytes), "rx-fleet/every")
	b.ReportMetric(f.view.Seconds()/e.view.Seconds(), "view-fleet/every")
	b.ReportMetric(float64(f.updateAlloc)/float64(e.updateAlloc), "update-alloc-fleet/every")
	b.ReportMetric(float64(f.pointsKept), "points-kept-fleet")
	b.ReportMetric(float64(e.pointsKept), "points-kept-every")
}
