package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stormctl/stormctl/internal/sanitize"
)

func buildReport(t testing.TB, lines [][]byte, head string) *Report {
	t.Helper()
	r, err := BuildReport(records(lines), head, Filter{Incident: "INC-7"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBuildReport(t *testing.T) {
	lines := chain(t, scriptedIncident())
	r := buildReport(t, lines, "")
	if r.Title != "checkout 5xx; payments p99 4s" || !r.Opened.Equal(at(0, 30)) || !r.Closed.Equal(at(15, 0)) {
		t.Errorf("header: %q %v %v", r.Title, r.Opened, r.Closed)
	}
	if strings.Join(r.Responders, ",") != "alice,bob,carol" || strings.Join(r.Playbooks, ",") != "retry-storm (version 3)" {
		t.Errorf("responders %v, playbooks %v", r.Responders, r.Playbooks)
	}
	// A1 superseded by A2, A2 released restoring A1 (still active), B1 expired.
	want := []string{"A1 off superseded 1m0s-5m0s", "B1 open expired 2m0s-12m0s", "A2 cap:2 released 5m0s-9m0s", "A1 off active 9m0s-31m0s"}
	var got []string
	for _, s := range r.Spans {
		got = append(got, s.ActionID+" "+s.Value+" "+s.End+" "+s.From.Sub(t0).String()+"-"+s.To.Sub(t0).String())
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("spans:\n got %v\nwant %v", got, want)
	}
	if c := r.Proof.Checks[0]; !c.OK || !strings.Contains(c.Detail, "chain intact: 11 entries linked by SHA-256 from the first") {
		t.Errorf("proof: %+v", r.Proof.Checks)
	}
	if r.Proof.Entries != 11 || r.Proof.RangeHash != sha256Hex(jsonl(lines)) {
		t.Errorf("range hash %s is not the sha256 of the jsonl export", r.Proof.RangeHash)
	}
	// The range hash is that of the filtered export.
	other := buildReportFilter(t, lines, Filter{Actor: "bob"})
	var buf bytes.Buffer
	if _, err := Export(&buf, JSONL, records(lines), Filter{Actor: "bob"}); err != nil || other.Proof.RangeHash != sha256Hex(withoutCheckpoint(buf.Bytes())) {
		t.Errorf("filtered range hash: %v", err)
	}
}

func buildReportFilter(t testing.TB, lines [][]byte, f Filter) *Report {
	t.Helper()
	r, err := BuildReport(records(lines), "", f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBuildReportBrokenChain(t *testing.T) {
	lines := chain(t, scriptedIncident())
	lines[4] = bytes.Replace(lines[4], []byte(`"bob"`), []byte(`"eve"`), 1)
	lines = append(lines[:7], lines[8:]...) // and an entry removed
	r := buildReport(t, lines, "")
	if c := r.Proof.Checks[0]; c.OK || !strings.Contains(c.Detail, "entry 5") {
		t.Errorf("an edited entry must fail the chain check at entry 5: %+v", c)
	}
	// The entries after the break are still shown.
	if len(r.Entries) != 10 {
		t.Errorf("%d entries shown, want the 10 left", len(r.Entries))
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r, t0); err != nil || !strings.Contains(b.String(), `<span class="bad">FAILED</span>`) {
		t.Errorf("the report must say the chain failed: %v", err)
	}

	// A record that is not an entry is named, not fatal.
	lines = append(lines, []byte("not json"))
	r = buildReport(t, lines, "")
	if c := r.Proof.Checks[len(r.Proof.Checks)-1]; c.Name != "readable records" || !strings.Contains(c.Detail, "line 11") {
		t.Errorf("unreadable record: %+v", r.Proof.Checks)
	}
	if r.Proof.Checkpoint != nil || !strings.Contains(r.Proof.CheckpointText(), "No closing checkpoint") {
		t.Errorf("a broken chain must get no closing checkpoint: %+v", r.Proof.Checkpoint)
	}
	// A head the record does not reach: entries cut from the end.
	r = buildReport(t, chain(t, scriptedIncident())[:9], "feedface")
	if r.Proof.Checks[0].OK {
		t.Error("a record short of the head must fail")
	}
}

func TestKeyTimesFromCharts(t *testing.T) {
	r := buildReport(t, chain(t, scriptedIncident()), "")
	crit := 1.3
	pts := func(vals ...float64) []ChartPoint {
		p := make([]ChartPoint, len(vals))
		for i, v := range vals {
			p[i] = ChartPoint{T: at(i, 0), V: v}
		}
		return p
	}
	r.Charts = []Chart{
		{ID: "amplification", Title: "Amplification", Alarm: &crit, Series: []ChartSeries{{Points: pts(1, 1, 4, 4, 4, 1, 2, 1, 1)}}},
		{ID: "edge_error_rate", Title: "Edge", Alarm: &crit, Series: []ChartSeries{{Points: pts(1, 1, 1, 2, 2, 2, 2, 2, 2)}}},
		{ID: "retry_ratio", Title: "Retry", NoData: "none"},
	}
	k := r.KeyTimes()
	got := map[string]KeyTime{}
	for _, kt := range k.Times {
		got[kt.Name] = kt
	}
	if !got["fault first seen"].At.Equal(at(2, 0)) || !got["mitigation"].At.Equal(at(7, 0)) {
		t.Errorf("fault %v, mitigation %v (after the last breach at 6m)", got["fault first seen"], got["mitigation"])
	}
	if !got["recovery"].At.IsZero() || !strings.Contains(got["recovery"].Note, "still past its threshold") {
		t.Errorf("recovery: %+v", got["recovery"])
	}
	if d := k.Durations[2]; d.Name != "time to mitigate" || d.D != 5*time.Minute {
		t.Errorf("durations: %+v", k.Durations)
	}
	if len(k.Breaches) != 3 || k.Breaches[2].Note != "no data" || !k.Breaches[2].At.IsZero() {
		t.Errorf("breaches: two dated, one without data: %+v", k.Breaches)
	}

	// Without charts the fault comes from the journal's evidence.
	r.Charts = nil
	r.Entries[2].Evidence[0].Status = "crit"
	if kt := r.KeyTimes().Times[0]; !kt.At.Equal(at(0, 50)) || !strings.Contains(kt.Note, "from the journal") {
		t.Errorf("fault from evidence: %+v", kt)
	}
}

func TestChartGeometry(t *testing.T) {
	sc := timeScale{from: t0, to: t0.Add(10 * time.Minute)}
	y := func(v float64) float64 { return v }
	got := pathData([]ChartPoint{{t0, 1}, {t0.Add(5 * time.Minute), 2}, {t0.Add(6 * time.Minute), math.NaN()}, {t0.Add(10 * time.Minute), 3}}, sc, y)
	if got != "M150.0 1.0 L549.0 2.0 M948.0 3.0" {
		t.Errorf("path %q: a NaN must start a new subpath", got)
	}
	for v, want := range map[float64]float64{0: 1, 0.98: 1, 1.07: 1.2, 4.6: 5, 230: 250, 0.031: 0.04} {
		if got := niceCeil(v); math.Abs(got-want) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
}

// FuzzWriteHTML: whatever an entry holds, the report renders without raw
// control characters, invalid UTF-8 or markup from the entry.
func FuzzWriteHTML(f *testing.F) {
	f.Add("amplification <script>alert(1)</script>", "checkout->payments", "\x1b]8;;http://x\x07")
	f.Add("\u202e", "", "\xff")
	f.Fuzz(func(t *testing.T, reason, target, actor string) {
		es := scriptedIncident()
		es[2].Reason, es[2].Target, es[2].Actor = reason, target, actor
		es[2].New.Reason = reason
		r := &Report{Incident: "INC-7", Entries: es}
		r.spans()
		var b bytes.Buffer
		if err := WriteHTML(&b, r, t0); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !utf8.ValidString(out) || strings.ContainsFunc(out, hidden) {
			t.Fatal("raw control characters or invalid UTF-8 in the report")
		}
		if strings.Contains(out, "<script") {
			t.Fatal("markup from an entry reached the report")
		}
	})
}

// hidden reports whether r may not reach a report as itself: whatever
// sanitize.HTMLText would escape.
func hidden(r rune) bool { return sanitize.HTMLText(string(r)) != string(r) }

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// FuzzBuildReport: whatever the records hold, building and rendering the
// report neither panics nor lets a raw control character through.
func FuzzBuildReport(f *testing.F) {
	lines := chain(f, scriptedIncident())
	f.Add(lines[2], lines[4])
	f.Add([]byte(`{"id":"X","time":"2024-05-01T12:00:00Z","event":"action.released","previous":{"action_id":"A"}}`), []byte("{"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		r, err := BuildReport(records([][]byte{lines[0], a, b}), "", Filter{})
		if err != nil {
			return // a record that cannot be read at all is an error, not a panic
		}
		var out bytes.Buffer
		if err := WriteHTML(&out, r, t0); err != nil {
			t.Fatal(err)
		}
		if s := out.String(); !utf8.ValidString(s) || strings.ContainsFunc(s, hidden) {
			t.Fatal("raw control characters or invalid UTF-8 in the report")
		}
	})
}

// withoutCheckpoint drops an export's closing checkpoint line, as the
// report's re-verify command does with grep -v.
func withoutCheckpoint(export []byte) []byte {
	var out []byte
	for line := range bytes.Lines(export) {
		if !IsCheckpoint(line) {
			out = append(out, line...)
		}
	}
	return out
}
