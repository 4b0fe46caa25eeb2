package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// RuleBlocks evaluates the recording rules of a rule file against a
// running Prometheus from start to end, every step, with `promtool tsdb
// create-blocks-from rules`, and returns the directory of the blocks
// written: pass it as PromOptions.Blocks to a server started with the
// same data, which then holds the recorded series as if the rules had
// always run. Alerting rules are skipped.
func (p *Prometheus) RuleBlocks(t testing.TB, rules string, start, end time.Time, step time.Duration) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "rules.yml")
	write(t, file, rules)
	out := t.TempDir()
	cmd := exec.Command("promtool", "tsdb", "create-blocks-from", "rules", "--quiet",
		"--url="+p.URL, "--output-dir="+out, "--eval-interval="+strconv.Itoa(int(step.Seconds()))+"s",
		"--start="+strconv.FormatInt(start.Unix(), 10), "--end="+strconv.FormatInt(end.Unix(), 10), file)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool create-blocks-from rules: %v\n%s", err, lastLines(string(b), 20))
	}
	return out
}

// moveBlocks moves every block directory of src into the TSDB at data.
func moveBlocks(t testing.TB, src, data string) {
	t.Helper()
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if err := os.Rename(filepath.Join(src, e.Name()), filepath.Join(data, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}
