package journal

import (
	"bytes"
	"encoding/csv"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update to accept):\n%s", name, got)
	}
}

func export(t *testing.T, format Format, f Filter) []byte {
	t.Helper()
	lines := chain(t, scriptedIncident())
	var buf bytes.Buffer
	opts := ExportOptions{Filter: f, Now: func() time.Time { return at(20, 0) }}
	if _, err := ExportWith(&buf, format, ReadRecords(bytes.NewReader(jsonl(lines)), "incident.jsonl"), opts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExportGolden(t *testing.T) {
	golden(t, "incident.md", export(t, Markdown, Filter{Incident: "INC-7"}))
	golden(t, "incident.csv", export(t, CSV, Filter{}))
	got := export(t, JSONL, Filter{})
	golden(t, "incident.jsonl", got)
	// An unfiltered JSON Lines export is the chain itself and verifies.
	if n, err := Verify(ReadRecords(bytes.NewReader(got), "export"), ""); err != nil || n != 11 {
		t.Fatalf("verify export: %d %v", n, err)
	}
}

// TestEveryExportServesAsCheckpoint reads the closing checkpoint back
// from an export in each format, as journal verify --checkpoint does.
func TestEveryExportServesAsCheckpoint(t *testing.T) {
	head := mustParse(t, chain(t, scriptedIncident())[10]).Hash
	for _, format := range []Format{Markdown, CSV, JSONL, HTML} {
		path := filepath.Join(t.TempDir(), "export."+string(format))
		if err := os.WriteFile(path, export(t, format, Filter{Actor: "bob"}), 0o600); err != nil {
			t.Fatal(err)
		}
		cp, err := ReadCheckpoint(path)
		if err != nil || cp.Count != 11 || cp.Head != head || !cp.Time.Equal(at(20, 0)) {
			t.Errorf("%s: %+v %v", format, cp, err)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.checkpoint")
	os.WriteFile(bad, []byte("\n{\"checkpoint\":1,\"head\":5}\n"), 0o600)
	if _, err := ReadCheckpoint(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":2:24: ") {
		t.Fatalf("malformed checkpoint: %v", err)
	}
	var empty bytes.Buffer
	if _, err := Export(&empty, Markdown, records(nil), Filter{}); err != nil || !strings.Contains(empty.String(), "Exported from an empty journal") {
		t.Fatalf("empty: %v %s", err, empty.String())
	}
}

func TestExportCSVReadsBack(t *testing.T) {
	rows, err := csv.NewReader(bytes.NewReader(export(t, CSV, Filter{}))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 13 || strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("%d rows, header %v", len(rows), rows[0])
	}
	// The last row is the checkpoint of the 11 entries.
	cp, err := ParseCheckpoint([]byte(rows[12][12]))
	if rows[12][2] != checkpointEvent || err != nil || cp.Count != 11 || cp.Head != rows[11][23] {
		t.Fatalf("checkpoint row %q: %v", rows[12], err)
	}
	note := rows[8]
	if note[2] != "note" || note[14] != "payments recovering\nerror rate 2%" {
		t.Fatalf("multi-line reason did not survive: %q", note)
	}
}

func TestExportFilters(t *testing.T) {
	cases := map[string]struct {
		f    Filter
		want int
	}{
		"actor":      {Filter{Actor: "bob"}, 3},
		"since":      {Filter{Since: at(5, 0)}, 5},
		"until":      {Filter{Until: at(2, 0)}, 4},
		"window":     {Filter{Since: at(2, 0), Until: at(9, 0), Actor: "bob"}, 2},
		"incident":   {Filter{Incident: "INC-8"}, 0},
		"redis user": {Filter{Actor: "responder"}, 11},
	}
	for name, tc := range cases {
		lines := chain(t, scriptedIncident())
		var buf bytes.Buffer
		n, err := Export(&buf, JSONL, records(lines), tc.f)
		if err != nil || n != tc.want || strings.Count(buf.String(), "\n") != tc.want+1 {
			t.Errorf("%s: %d entries (%v), want %d", name, n, err, tc.want)
		}
		// Filtered or not, the closing checkpoint is of the whole journal read.
		last := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
		if cp, err := ParseCheckpoint(last[len(last)-1]); err != nil || cp.Count != len(lines) || cp.Head != mustParse(t, lines[len(lines)-1]).Hash {
			t.Errorf("%s: closing checkpoint %+v %v", name, cp, err)
		}
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2024, 5, 1, 13, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2024-05-01T12:30:00Z":      time.Date(2024, 5, 1, 12, 30, 0, 0, time.UTC),
		"2024-05-01T14:30:00+02:00": time.Date(2024, 5, 1, 12, 30, 0, 0, time.UTC),
		"2024-05-01":                time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC),
		"90m":                       time.Date(2024, 5, 1, 11, 30, 0, 0, time.UTC),
	} {
		got, err := ParseTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-5m", "2024-13-01"} {
		if _, err := ParseTime(bad, now); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2024-05-01T12:30:00Z", "2024-05-01", "90m", "1h2m3s", "-1s", "9999999999h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s, time.Unix(0, 0))
		if err == nil && got.IsZero() && s != "0001-01-01" && !strings.HasPrefix(s, "0001-01-01T") {
			t.Fatalf("%q parsed to the zero time", s)
		}
	})
}
