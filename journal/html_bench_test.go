package journal

import (
	"fmt"
	"io"
	"math"
	"testing"
	"time"
)

// twoHourIncident is 200 entries, unsealed, over two hours: actions applied on
// rotating targets and each ended by a release or an expiry, with notes
// and playbook steps between, and five charts of two series each sampled
// at the report's own step, as Prometheus would return them.
func twoHourIncident(b *testing.B) ([]Entry, []Chart) {
	var entries []Entry
	var open *LeverState
	ev := []Evidence{{Query: "amplification", Pack: "stormctl", Value: 3.2, Threshold: "warn > 1.2, crit > 1.3 for 1m", Status: "crit", Time: t0}}
	for i := range 200 {
		ts := t0.Add(time.Duration(i) * 36 * time.Second)
		e := Entry{ID: fmt.Sprintf("E%04d", i), Time: ts, Actor: "alice", RedisUser: "responder", Incident: "INC-7", Step: AdHoc,
			Kind: "retries", Target: fmt.Sprintf("svc-%d->db", i%6), Value: "off", Reason: "amplification above 1.3 <b>"}
		switch {
		case i == 0:
			e.Event, e.Kind, e.Target, e.Value = IncidentOpened, "", "", ""
		case open == nil:
			open = &LeverState{Value: "off", ActionID: fmt.Sprintf("A%04d", i), Actor: "alice", CreatedAt: ts, ExpiresAt: ts.Add(30 * time.Minute), Version: int64(i)}
			e.Event, e.ActionID, e.TTL, e.Evidence, e.New, e.Outcome = ActionApplied, open.ActionID, Duration(30*time.Minute), ev, open, "applied"
		case i%4 == 0:
			e.Event, e.ActionID, e.Previous, e.Outcome = ActionReleased, open.ActionID, open, "released"
			open = nil
		case i%4 == 1:
			e.Event, e.ActionID, e.Previous, e.Outcome, e.Actor = ActionExpired, open.ActionID, open, "expired", "stormctl (expiry)"
			open = nil
		case i%4 == 2:
			e.Event, e.Playbook, e.PlaybookVersion, e.Step = PlaybookPassed, "retry-amplification", "2", fmt.Sprintf("step-%d", i)
		default:
			e.Event, e.Kind, e.Target, e.Value = Note, "", "", ""
		}
		entries = append(entries, e)
	}
	r := &Report{Entries: entries}
	from, to := r.ChartWindow()
	step := ChartStep(from, to)
	crit := 1.3
	var charts []Chart
	for c := range 5 {
		ch := Chart{ID: fmt.Sprintf("q%d", c), Title: fmt.Sprintf("query %d", c), Alarm: &crit,
			Lines: []ChartLine{{"warn", 1.2}, {"crit", 1.3}}}
		for s := range 2 {
			var pts []ChartPoint
			for t := from; !t.After(to); t = t.Add(step) {
				pts = append(pts, ChartPoint{T: t, V: 1 + math.Max(0, 3*math.Sin(float64(t.Sub(from))/float64(to.Sub(from))*math.Pi)) + float64(s)/10})
			}
			ch.Series = append(ch.Series, ChartSeries{Name: fmt.Sprintf("service=svc-%d", s), Points: pts})
		}
		charts = append(charts, ch)
	}
	return entries, charts
}

// BenchmarkReportHTML renders the report of a two-hour incident with 200
// entries (Prometheus time excluded: the charts are given). Baseline: the
// Markdown timeline of the same entries, in the same run; html-signed has
// every entry signed (ed25519) and checked against allowed_signers, and
// its closing checkpoint signed.
func BenchmarkReportHTML(b *testing.B) {
	entries, charts := twoHourIncident(b)
	lines := chain(b, entries)
	dir := b.TempDir()
	alice := newKey(b, dir, "alice", "ed25519")
	_, allowed := allowedFile(b, dir, "alice "+alice.pub)
	signed := chainSigned(b, entries, alice.signer)
	var base float64
	perOp := func(b *testing.B, start time.Time) {
		per := float64(time.Since(start).Nanoseconds()) / float64(b.N)
		if base == 0 || b.Name() == "BenchmarkReportHTML/markdown-baseline" {
			base = per
		}
		b.ReportMetric(per/base, "x-markdown")
	}
	b.Run("markdown-baseline", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			if _, err := Export(io.Discard, Markdown, records(lines), Filter{Incident: "INC-7"}); err != nil {
				b.Fatal(err)
			}
		}
		perOp(b, start)
	})
	for _, tc := range []struct {
		name  string
		lines [][]byte
		opts  ReportOptions
	}{
		{"html", lines, ReportOptions{Filter: Filter{Incident: "INC-7"}}},
		{"html-signed", signed, ReportOptions{Filter: Filter{Incident: "INC-7"}, AllowedSigners: allowed, Signer: alice.signer, Actor: "alice"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				r, err := BuildReportWith(records(tc.lines), tc.opts)
				if err != nil || !r.Proof.Verification.OK() {
					b.Fatal(err, r.Proof.Checks)
				}
				r.Charts = charts
				if err := WriteHTML(io.Discard, r, t0); err != nil {
					b.Fatal(err)
				}
			}
			perOp(b, start)
		})
	}
}
