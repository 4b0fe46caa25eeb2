package journal

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/sanitize"
)

//go:embed report.html.tmpl
var reportTemplate string

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"clock": func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"dur":   func(d time.Duration) string { return d.Round(time.Second).String() },
	"num":   func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"sub":   func(a, b float64) float64 { return a - b },
	"add":   func(a, b float64) float64 { return a + b },
}).Parse(reportTemplate))

// htmlView is what the template reads.
type htmlView struct {
	*Report
	Generated    time.Time
	From, To     time.Time
	Keys         KeyTimes
	Charts       []svgChart
	Lane         svgLane
	Rows         []htmlRow
	W, H, PlotR  float64
	PadL, Bottom float64
}

type htmlRow struct {
	Entry
	ActorText, EvidenceText, OutcomeText string
	Signer                               EntrySigner
	Class                                string
}

// WriteHTML writes the report as one self-contained HTML file: inline CSS
// and SVG, no script, and a Content-Security-Policy that forbids loading
// anything, so it opens offline and cannot call out. Every text from the
// journal or Prometheus is escaped by html/template, and control
// characters are then written as visible escapes (sanitize.HTMLText).
func WriteHTML(w io.Writer, r *Report, now time.Time) error {
	from, to := r.ChartWindow()
	sc := timeScale{from: from, to: to}
	markers := markersFor(r.Entries, sc)
	v := htmlView{Report: r, Generated: now, From: from, To: to, Keys: r.KeyTimes(), Lane: drawLane(r.Spans, sc),
		W: svgW, H: svgH, PlotR: svgW - padR, PadL: padL, Bottom: svgH - padB}
	for _, c := range r.Charts {
		if !c.Hidden {
			v.Charts = append(v.Charts, drawChart(c, sc, markers))
		}
	}
	for i, e := range r.Entries {
		sig, ok := r.Signers[i]
		if !ok {
			sig = EntrySigner{Text: "signature not checked: after the chain break", Class: "bad"}
		}
		v.Rows = append(v.Rows, htmlRow{Entry: e, ActorText: actorText(e), Signer: sig, EvidenceText: evidenceText(e.Evidence, "\n"),
			OutcomeText: outcomeText(e), Class: eventClass(e.Event)})
	}
	var buf bytes.Buffer
	if err := reportTmpl.Execute(&buf, v); err != nil {
		return err
	}
	_, err := io.WriteString(w, sanitize.HTMLText(buf.String()))
	return err
}

// exportHTML is the report without charts, for Export: the chain is
// checked from the first entry, with no head to compare the end with, and
// the closing checkpoint is signed by o.Signer.
func exportHTML(w io.Writer, recs iter.Seq2[Record, error], o ExportOptions) (int, error) {
	r, err := BuildReportWith(recs, ReportOptions{Filter: o.Filter, Signer: o.Signer, Actor: o.Actor, Now: o.Now})
	if err != nil {
		return 0, err
	}
	r.ChartsNote = "Charts are not drawn in this export; stormctl journal export --format html draws them from Prometheus."
	return len(r.Entries), WriteHTML(w, r, time.Now())
}

// outcomeText is what an entry did, and for an end or a supersede, which
// action it ended and how long that action had held the lever.
func outcomeText(e Entry) string {
	parts := []string{e.Outcome}
	if p := e.Previous; p != nil {
		switch e.Event {
		case ActionApplied:
			parts = append(parts, fmt.Sprintf("superseded action %s of %s", p.ActionID, p.Actor))
		case ActionReleased, ActionExpired:
			parts = append(parts, fmt.Sprintf("ended action %s of %s after %s", p.ActionID, p.Actor, e.Time.Sub(p.CreatedAt).Round(time.Second)))
		}
	}
	if e.Error != "" {
		parts = append(parts, e.Error)
	}
	return strings.Trim(strings.Join(parts, "; "), "; ")
}
