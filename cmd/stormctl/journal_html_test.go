package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

var updateReport = flag.Bool("update-report", false, "rewrite testdata/report-INC-42.html")

const reportGolden = "testdata/report-INC-42.html"

// exportHTML runs journal export --format html on the fixture's journal
// and returns the report, stderr and the exit code.
func exportHTML(t *testing.T, promURL string, extra ...string) (string, string, int) {
	t.Helper()
	path := writeJournal(t, reportEntries())
	out := filepath.Join(t.TempDir(), "report.html")
	args := append([]string{"journal", "export", "--format", "html", "--incident", "INC-42", "--file", path, "--out", out}, extra...)
	_, stderr, code := runCLI(t, map[string]string{"STORMCTL_PROMETHEUS_URL": promURL}, args...)
	data, _ := os.ReadFile(out)
	return normalReport(string(data), path, out), stderr, code
}

// normalReport replaces what differs per run in a report: the files'
// places, the generation time and the closing checkpoint's time.
func normalReport(html, journalPath, reportPath string) string {
	html = strings.ReplaceAll(html, journalPath, "JOURNAL.jsonl")
	html = strings.ReplaceAll(html, reportPath, "REPORT.html")
	html = regexp.MustCompile(`<dt>Generated</dt><dd>[^<]*`).ReplaceAllString(html, "<dt>Generated</dt><dd>NOW")
	html = regexp.MustCompile(`(&#34;time&#34;:&#34;)[^&]*`).ReplaceAllString(html, "${1}NOW")
	return regexp.MustCompile(`(head [0-9a-f]{64}, at )[^;]*`).ReplaceAllString(html, "${1}NOW")
}

func TestJournalExportHTMLCharts(t *testing.T) {
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: reportMetrics()})
	html, stderr, code := exportHTML(t, prom.URL)
	if code != 0 || strings.Contains(stderr, "warning") || !strings.Contains(stderr, "exported 10 entries") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if *updateReport {
		if err := os.WriteFile(reportGolden, []byte(html), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(reportGolden)
	if err != nil {
		t.Fatal(err)
	}
	if html != string(want) {
		got := filepath.Join(t.TempDir(), "got.html")
		os.WriteFile(got, []byte(html), 0o600)
		t.Errorf("report differs from %s (got %s; -update-report rewrites it)", reportGolden, got)
	}

	// What the golden file must show, whatever it holds.
	for _, id := range []string{"amplification", "retry_ratio", "edge_error_rate", "pool_saturation", "dependency_p99"} {
		fig := figure(t, html, id)
		if strings.Contains(fig, "No chart") || strings.Count(fig, `<path class="series`) != 1 {
			t.Errorf("chart %s: want one series drawn:\n%.600s", id, fig)
		}
		if n := strings.Count(fig, `<g class="marker`); n != 10 {
			t.Errorf("chart %s: %d markers, want one per entry (10)", id, n)
		}
		if !strings.Contains(fig, `class="threshold th-crit"`) {
			t.Errorf("chart %s: no crit threshold line", id)
		}
	}
	keys := []string{
		// First samples past crit: amplification and retry ratio once the
		// 1m rate window holds storm samples; mitigation is the first
		// sample after amplification's last breach, recovery the edge
		// error rate's. Detection is when the first breach had lasted its
		// for: (retry ratio's 20s), not the incident's opening at 10:04.
		`<tr><td>fault first seen</td><td class="t">2026-03-02 10:02:`,
		`<tr><td>detection</td><td class="t">2026-03-02 10:02:30Z</td><td>first breach of Retry ratio (retries ÷ attempts) held for its for: (20s)`,
		`<tr><td>first action</td><td class="t">2026-03-02 10:06:00Z</td><td>retries off on checkout-&gt;payments by alice</td>`,
		`<tr><td>mitigation</td><td class="t">2026-03-02 10:07:`,
		`<tr><td>recovery</td><td class="t">2026-03-02 10:10:`,
		`<tr><td>time to first action</td><td class="t">3m30s</td>`,
	}
	for _, k := range keys {
		if !strings.Contains(html, k) {
			t.Errorf("key times: missing %q", k)
		}
	}
	assertEscaped(t, html)
	// The fixture is unsigned: every row says so, and so does the proof.
	if got := signerCells(html); got["unsigned"] != 10 || len(got) != 1 ||
		!strings.Contains(html, `<tr><td>signatures</td><td><span class="muted">not proven</span></td><td>unsigned: the chain detects accidental edits only`) {
		t.Errorf("unsigned journal: signer cells %v", got)
	}
	if !strings.Contains(html, "exported range</td><td class=\"mono\">sha256 "+rangeHash(t)) {
		t.Error("proof: the range hash is not the sha256 of the jsonl export the report tells to run")
	}
	if !strings.Contains(html, "stormctl journal verify --file JOURNAL.jsonl --checkpoint REPORT.html") ||
		!strings.Contains(html, "stormctl journal export --format jsonl --file JOURNAL.jsonl --incident INC-42 | grep -v &#39;^{&#34;checkpoint&#34;:&#39; | sha256sum") {
		t.Error("proof: re-verify commands missing")
	}
}

// assertEscaped checks the hostile reason of the fixture (a <script> tag
// and ANSI colour escapes) renders as text.
func assertEscaped(t *testing.T, html string) {
	t.Helper()
	if strings.Contains(html, "<script") || strings.ContainsRune(html, 0x1b) {
		t.Error("a reason's <script> or ESC byte reached the HTML raw")
	}
	if !strings.Contains(html, `amplification 4 &lt;script&gt;alert(1)&lt;/script&gt; \x1b[31mred\x1b[0m`) {
		t.Error("the hostile reason is not shown escaped")
	}
}

// figure is the HTML of one chart.
func figure(t *testing.T, html, id string) string {
	t.Helper()
	i := strings.Index(html, `<figure class="chart" id="chart-`+id+`">`)
	if i < 0 {
		t.Fatalf("no chart %s", id)
	}
	end := strings.Index(html[i:], "</figure>")
	return html[i : i+end]
}

func TestJournalExportHTMLWithoutPrometheus(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	html, stderr, code := exportHTML(t, "http://"+addr)
	if code != 0 || !strings.Contains(stderr, "warning: charts not drawn") || !strings.Contains(stderr, addr) {
		t.Fatalf("exit %d, want 0 and a warning naming %s:\n%s", code, addr, stderr)
	}
	if n := strings.Count(html, `<p class="nodata">No chart: Prometheus did not answer`); n != 5 {
		t.Errorf("%d charts say Prometheus did not answer, want 5", n)
	}
	if !strings.Contains(html, "<h2>Timeline</h2>") || strings.Count(html, "<tr class=\"ev-") != 10 {
		t.Error("the report without charts lacks its timeline")
	}
	assertEscaped(t, html)

	// No Prometheus configured at all: the same, naming what to set.
	html, stderr, code = exportHTML(t, "")
	if code != 0 || !strings.Contains(stderr, "warning: charts not drawn: no Prometheus URL") ||
		strings.Count(html, "No chart: no Prometheus URL") != 5 {
		t.Errorf("no Prometheus URL: exit %d, stderr %q", code, stderr)
	}

	html, stderr, code = exportHTML(t, "http://"+addr, "--no-charts")
	if code != 0 || stderr != "exported 10 entries to "+stderr[len("exported 10 entries to "):] || strings.Contains(stderr, "warning") {
		t.Fatalf("--no-charts: exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(html, "Charts were not drawn (--no-charts).") || strings.Contains(html, `<figure`) {
		t.Error("--no-charts: the report does not say why there are no charts")
	}
}

func TestJournalExportHTMLAgedOut(t *testing.T) {
	// A Prometheus that holds none of the incident's data: it aged out.
	prom := testenv.StartPrometheus(t, testenv.PromOptions{})
	html, stderr, code := exportHTML(t, prom.URL)
	if code != 0 || strings.Count(stderr, "no data in the incident window") != 5 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if n := strings.Count(html, "No chart: no data from 2026-03-02 09:59:00 to 2026-03-02 10:26:00 UTC for the targeted services (metric"); n != 5 {
		t.Errorf("%d charts say there is no data in the window, want 5", n)
	}
	if !strings.Contains(html, "<tr><td>mitigation</td><td class=\"t\">—</td><td>not known: amplification has no data</td>") {
		t.Error("mitigation should be unknown without data")
	}
}

// TestJournalExportHTMLFromRedis reads the control plane's journal and
// checks the chain up to its head.
func TestJournalExportHTMLFromRedis(t *testing.T) {
	r, s := seededStore(t)
	head, err := s.JournalHead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "INC-7.html")
	_, stderr, code := runCLI(t, map[string]string{"STORMCTL_REDIS_URL": r.URL("", "")},
		"journal", "export", "--format", "html", "--incident", "INC-7", "--no-charts", "--out", out)
	data, _ := os.ReadFile(out)
	if code != 0 || !strings.Contains(stderr, "exported 2 entries to "+out) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`<span class="ok">verified</span>`, "reaching the control plane&#39;s head", "head " + head[:12],
		"stormctl journal verify --checkpoint " + out + "\n", "retries checkout-&gt;payments", "breaker payments"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("report from Redis lacks %q", want)
		}
	}
	if _, stderr, code = runCLI(t, map[string]string{"STORMCTL_REDIS_URL": r.URL("", "")},
		"journal", "export", "--format", "html", "--incident", "INC-404", "--no-charts"); code != 1 || !strings.Contains(stderr, "no entries match") {
		t.Errorf("unknown incident: exit %d, %s", code, stderr)
	}
}

// rangeHash runs the export the report's proof names and hashes it.
func rangeHash(t *testing.T) string {
	t.Helper()
	out, stderr, code := runCLI(t, nil, "journal", "export", "--format", "jsonl", "--file", writeJournal(t, reportEntries()), "--incident", "INC-42")
	if code != 0 {
		t.Fatalf("export jsonl: %d %s", code, stderr)
	}
	var entries []byte
	for line := range strings.Lines(out) {
		if !journal.IsCheckpoint([]byte(line)) {
			entries = append(entries, line...)
		}
	}
	sum := sha256.Sum256(entries)
	return hex.EncodeToString(sum[:])
}

// TestJournalExportHTMLSilentPrometheus: a server that accepts and drops
// every connection is asked once, not once per chart and target.
func TestJournalExportHTMLSilentPrometheus(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	html, stderr, code := exportHTML(t, "http://"+l.Addr().String())
	if code != 0 || strings.Count(stderr, "warning: ") != 1 || !strings.Contains(stderr, l.Addr().String()) {
		t.Fatalf("exit %d, want 0 and one warning naming the address:\n%s", code, stderr)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections to a Prometheus that does not answer, want 1", n)
	}
	if strings.Count(html, "No chart: Prometheus did not answer") != 5 {
		t.Error("each chart should say Prometheus did not answer")
	}
}
