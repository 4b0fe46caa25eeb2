package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJournalReportTableWrapsInChromium: a timeline with long unbroken
// words (a dashboard URL in a reason, a long target, a long error) stays
// within the page, on a wide and a narrow screen and printed on A4.
func TestJournalReportTableWrapsInChromium(t *testing.T) {
	es := reportEntries()
	es[2].Reason = "see https://grafana.example.com/d/retry-storm/checkout?orgId=1&var-service=checkout&var-dependency=payments&from=now-1h&to=now&viewPanel=amplification-by-dependency"
	es[4].Target = "payments-ledger-reconciliation-batch-worker-eu-west-1-canary-" + strings.Repeat("x", 40)
	es[4].Error = "evidence: " + strings.Repeat("dependency_p99{service=\"checkout\",dependency=\"payments\"}", 3) + " needs --force"
	path := writeJournal(t, es)
	out := filepath.Join(t.TempDir(), "report.html")
	if _, stderr, code := runCLI(t, nil, "journal", "export", "--format", "html", "--no-charts", "--incident", "INC-42", "--file", path, "--out", out); code != 0 {
		t.Fatalf("export: exit %d %s", code, stderr)
	}
	report, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := openReport(t, string(report))
	const overflowJS = `JSON.parse(JSON.stringify({
  Table: document.querySelector('#timeline table').getBoundingClientRect().right,
  Body: document.body.getBoundingClientRect().right,
  Page: document.documentElement.scrollWidth, View: document.documentElement.clientWidth,
  Widest: [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth)
    .map(e => e.tagName + (e.id ? '#' + e.id : '') + (e.className.baseVal ?? e.className ? '.' + (e.className.baseVal ?? e.className) : '') + ': ' + e.textContent.slice(0, 40)).slice(-3)}))`
	var m struct {
		Table, Body, Page, View float64
		Widest                  []string // the innermost elements past the view
	}
	for _, c := range []struct {
		name  string
		width int
		media string
	}{{"wide screen", 1200, "screen"}, {"narrow screen", 700, "screen"}, {"A4 print", 718, "print"}} {
		d.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": c.width, "height": 2400, "deviceScaleFactor": 1, "mobile": false}, nil)
		d.call("Emulation.setEmulatedMedia", map[string]any{"media": c.media}, nil)
		d.eval(overflowJS, &m)
		if m.Table > m.Body+0.5 || m.Page > m.View {
			t.Errorf("%s (%d px): the timeline ends at %.0f px, the page at %.0f; the page is %.0f px wide in a %.0f px view; past it: %q",
				c.name, c.width, m.Table, m.Body, m.Page, m.View, m.Widest)
		}
		if dir := os.Getenv("STORMCTL_REPORT_SCREENSHOT_DIR"); dir != "" {
			os.WriteFile(filepath.Join(dir, "report-wrap-"+strings.ReplaceAll(c.name, " ", "-")+".png"), d.screenshot(), 0o644)
		}
	}
}
