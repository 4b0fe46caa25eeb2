package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stormctl/stormctl/internal/testenv"
)

// pageChecks is what the rendered report shows, measured in Chromium.
type pageChecks struct {
	Charts []struct {
		ID       string
		Width    float64 // of the drawn SVG, in CSS pixels
		Paths    int
		Length   float64 // of the first series path, in SVG units
		Markers  int
		Titled   int // markers whose tooltip names an actor
		NoChart  bool
		NoteText string
	}
	Loaders  int    // elements that load or link anything
	Reason   string // the hostile reason's table cell, as text
	Rows     int
	LaneBars int
}

const pageChecksJS = `JSON.parse(JSON.stringify({
  Charts: [...document.querySelectorAll('figure.chart')].map(f => {
    const svg = f.querySelector('svg'), paths = [...f.querySelectorAll('path.series')], note = f.querySelector('p.nodata');
    const markers = [...f.querySelectorAll('g.marker')];
    return {ID: f.id, Width: svg ? svg.getBoundingClientRect().width : 0, Paths: paths.length,
      Length: paths.length ? paths[0].getTotalLength() : 0, Markers: markers.length,
      Titled: markers.filter(m => / by /.test(m.querySelector('title')?.textContent || '')).length,
      NoChart: !!note, NoteText: note ? note.textContent : ''};
  }),
  Loaders: document.querySelectorAll('script, img, link, iframe, object, [src], [href]').length,
  Reason: [...document.querySelectorAll('#timeline td')].map(td => td.textContent).find(t => t.startsWith('amplification 4')) || '',
  Rows: document.querySelectorAll('#timeline tbody tr').length,
  LaneBars: document.querySelectorAll('#levers g.bar rect').length,
}))`

// openReport writes html to a file, opens it in headless Chromium and
// measures it; it fails if the page requests anything but itself.
func openReport(t *testing.T, report string) (*devtools, pageChecks) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, []byte(report), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startChromium(t)
	d.open("file://" + file)
	var pc pageChecks
	d.eval(pageChecksJS, &pc)
	if reqs := d.requests("file://" + file); len(reqs) > 0 {
		t.Errorf("the report requested %d URLs: %q", len(reqs), reqs)
	}
	if pc.Loaders != 0 {
		t.Errorf("%d elements load or link something", pc.Loaders)
	}
	return d, pc
}

func TestJournalReportInChromium(t *testing.T) {
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: reportMetrics()})
	report, stderr, code := exportHTML(t, prom.URL)
	if code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	d, pc := openReport(t, report)
	if len(pc.Charts) != 5 {
		t.Fatalf("%d charts rendered, want 5", len(pc.Charts))
	}
	for _, c := range pc.Charts {
		// The series runs across most of the 798-unit plot.
		if c.NoChart || c.Width < 500 || c.Paths != 1 || c.Length < 700 {
			t.Errorf("%s: not drawn: %+v", c.ID, c)
		}
		if c.Markers != 10 || c.Titled != 10 {
			t.Errorf("%s: %d markers, %d with a tooltip naming the actor; want one per journal entry (10)", c.ID, c.Markers, c.Titled)
		}
	}
	if pc.Reason != `amplification 4 <script>alert(1)</script> \x1b[31mred\x1b[0m` {
		t.Errorf("the hostile reason renders as %q, want it as text", pc.Reason)
	}
	if pc.Rows != 10 || pc.LaneBars != 2 {
		t.Errorf("%d timeline rows (want 10), %d lever bars (want 2)", pc.Rows, pc.LaneBars)
	}

	img, err := png.Decode(bytes.NewReader(d.screenshot()))
	if err != nil {
		t.Fatal(err)
	}
	// A drawn page, not a blank one: many pixels differ from the corner's.
	b := img.Bounds()
	bg, inked, sampled := img.At(0, 0), 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			sampled++
			if img.At(x, y) != bg {
				inked++
			}
		}
	}
	if b.Dx() != 1200 || b.Dy() < 2400 || inked < sampled/50 {
		t.Errorf("screenshot %v: %d of %d sampled pixels drawn", b, inked, sampled)
	}
	if dir := os.Getenv("STORMCTL_REPORT_SCREENSHOT_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, "report-INC-42.png"), d.screenshot(), 0o644)
	}

	// Dark and light follow the reader's preference.
	for scheme, want := range map[string]string{"dark": "rgb(13, 17, 23)", "light": "rgb(255, 255, 255)"} {
		d.call("Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": scheme}}}, nil)
		var bg string
		d.eval(`getComputedStyle(document.body).backgroundColor`, &bg)
		if bg != want {
			t.Errorf("%s mode: background %s, want %s", scheme, bg, want)
		}
	}
	// Printed, it is A4 pages (595×842 points), with the charts on them.
	var pdf struct{ Data []byte }
	d.call("Page.printToPDF", map[string]any{"preferCSSPageSize": true}, &pdf)
	pages := regexp.MustCompile(`/Type /Page\b[^s]`).FindAll(pdf.Data, -1)
	if !bytes.HasPrefix(pdf.Data, []byte("%PDF-")) || len(pages) < 2 || !regexp.MustCompile(`/MediaBox \[0 0 59[45]\.\d+ 841\.\d+\]`).Match(pdf.Data) {
		t.Errorf("print: %d bytes, %d pages, media box %s", len(pdf.Data), len(pages),
			regexp.MustCompile(`/MediaBox \[[^\]]*\]`).Find(pdf.Data))
	}
}

// TestJournalReportInChromiumWithoutCharts: the report of an unreachable
// Prometheus still renders, with the reason in place of each chart.
func TestJournalReportInChromiumWithoutCharts(t *testing.T) {
	report, _, code := exportHTML(t, "http://127.0.0.1:1")
	if code != 0 {
		t.Fatalf("export exit %d", code)
	}
	_, pc := openReport(t, report)
	if len(pc.Charts) != 5 || pc.Rows != 10 {
		t.Fatalf("%d charts, %d rows", len(pc.Charts), pc.Rows)
	}
	for _, c := range pc.Charts {
		if !c.NoChart || c.Paths != 0 || c.NoteText == "" {
			t.Errorf("%s: want the reason in place of the chart: %+v", c.ID, c)
		}
	}
}
