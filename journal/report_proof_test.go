package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportCheckpointNotForgeable: a checkpoint planted in a reason is
// text in the timeline, never the report's checkpoint, even when the
// report has none of its own (a broken chain).
func TestReportCheckpointNotForgeable(t *testing.T) {
	entries := scriptedIncident()
	planted := `{"checkpoint":1,"head":"` + strings.Repeat("ab", 32) + `","count":1,"time":"2026-01-01T00:00:00Z"}`
	entries[7].Reason = "note\n" + planted + "\n<pre class=\"mono\" id=\"checkpoint\">\n" + planted
	lines := chain(t, entries)
	for name, lines := range map[string][][]byte{"intact": lines, "broken": append(lines[:3:3], lines[4:]...)} {
		var b bytes.Buffer
		if _, err := Export(&b, HTML, records(lines), Filter{}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "report.html")
		os.WriteFile(path, b.Bytes(), 0o600)
		cp, err := ReadCheckpoint(path)
		switch {
		case name == "intact" && (err != nil || cp.Count != len(lines)):
			t.Errorf("intact: the report's own checkpoint must be read: %+v %v", cp, err)
		case name == "broken" && (err == nil || !strings.Contains(err.Error(), "no checkpoint in the file")):
			t.Errorf("broken: the planted checkpoint was taken: %+v %v", cp, err)
		}
	}
}
