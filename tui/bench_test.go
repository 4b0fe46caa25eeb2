package tui

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/tui/components/signals"
)

// benchModel is the storm world at 200×60: 12 panels with 15-minute
// sparklines (61 points each), a lever, and the journal.
func benchModel(b *testing.B) (*harness, []signals.Target, signalsMsg) {
	w := newWorld()
	h := w.open(b, Options{Context: "prod", Incident: "INC-7"}, 200, 60)
	if n := len(h.m.signals.Panels()); n != 12 {
		b.Fatalf("%d panels, want 12", n)
	}
	now := w.c.Now()
	msg := signalsMsg{results: w.q.RunAll(h.m.Ctx, signals.Requests(h.m.targets, now)), at: now}
	return h, h.m.targets, msg
}

// plainScreen is the least any renderer does for a 200×60 screen: write
// every cell once. The benchmarks report their cost as a multiple of it.
func plainScreen(lines []string) string {
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(l)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// baseline times plainScreen for a 200×60 screen, once per run.
var baseline = sync.OnceValue(func() float64 {
	lines := strings.Split(strings.Repeat(strings.Repeat("─", 200)+"\n", 60), "\n")
	// testing.Benchmark cannot run inside a benchmark: time a loop.
	n, start := 0, time.Now()
	for time.Since(start) < 300*time.Millisecond {
		_ = plainScreen(lines)
		n++
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
})

// BenchmarkView draws the whole dashboard at 200×60 with 12 panels.
func BenchmarkView(b *testing.B) {
	h, _, _ := benchModel(b)
	benchView(b, h)
}

// benchView times View, reported as a multiple of the plain copy.
func benchView(b *testing.B, h *harness) {
	base := baseline()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = h.m.View()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/base, "x_plain_copy")
}

// BenchmarkRefreshCycle is the dashboard's side of one refresh: building
// the range requests, turning 10 results into 12 panels, and drawing.
func BenchmarkRefreshCycle(b *testing.B) {
	h, targets, msg := benchModel(b)
	base := baseline()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = signals.Requests(targets, msg.at)
		h.m.refreshing = true
		h.m.Update(msg)
		_ = h.m.View()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/base, "x_plain_copy")
}

// BenchmarkView80x24 draws the dashboard at 80×24, where the signals are
// a list (one value column, "N more"), against the same plain copy.
func BenchmarkView80x24(b *testing.B) {
	h, _, _ := benchModel(b)
	h.send(windowSize(80, 24))
	benchView(b, h)
}
