package testenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// StagedRuleBlocks is RuleBlocks for rule files that read each other's
// series, which promtool cannot evaluate in one pass: stages[0] is
// evaluated against p, and each later stage against a server holding the
// series the earlier stages recorded. It returns one directory with the
// blocks of every stage, for PromOptions.Blocks.
func (p *Prometheus) StagedRuleBlocks(t testing.TB, stages []string, start, end time.Time, step time.Duration) string {
	t.Helper()
	all := t.TempDir()
	src := p
	for i, rules := range stages {
		copyBlocks(t, src.RuleBlocks(t, rules, start, end, step), all)
		if src != p {
			src.Stop()
		}
		if i < len(stages)-1 {
			earlier := t.TempDir()
			copyBlocks(t, all, earlier)
			src = StartPrometheus(t, PromOptions{Blocks: earlier})
		}
	}
	return all
}

// copyBlocks copies every block directory of src into dst.
func copyBlocks(t testing.TB, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if err := os.CopyFS(filepath.Join(dst, e.Name()), os.DirFS(filepath.Join(src, e.Name()))); err != nil {
			t.Fatal(err)
		}
	}
}
