package sanitize

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// copyCost times copying s into a new string, the least any pass over it
// costs; the benchmarks report their time as a multiple of it (x_copy),
// measured in the same run.
func copyCost(s string) float64 {
	n, start := 0, time.Now()
	for time.Since(start) < 200*time.Millisecond {
		_ = strings.Clone(s)
		n++
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

func report(b *testing.B, s string) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/copyCost(s), "x_copy")
}

// styledFrame is a 200×60 dashboard frame: each line styled with SGR, as
// lipgloss draws it.
func styledFrame() string {
	line := "\x1b[1;38;5;196mCRIT\x1b[0m amplification checkout->payments 4.0 " + strings.Repeat("▁▂▃▅█", 30) + "\x1b[0m"
	return strings.Repeat(line+"\n", 60)
}

func BenchmarkSanitize(b *testing.B) {
	reason := "amplification 4x on checkout->payments since 14:02, p99 above the 2s timeout"
	entry, _ := json.Marshal(map[string]string{"reason": reason, "actor": "alice", "target": "checkout->payments"})
	stream := strings.Repeat(string(entry)+"\n", 512) // ~64 KB of JSON Lines
	cases := []struct {
		name, in string
		run      func(string)
	}{
		{"line/clean", reason, func(s string) { _ = Line(s) }},
		{"line/hostile", reason + osc52 + bidi, func(s string) { _ = Line(s) }},
		{"frame/200x60", styledFrame(), func(s string) { _ = Frame(s) }},
		{"writer/64KB-jsonl", stream, func(s string) { _, _ = NewWriter(io.Discard).Write([]byte(s)) }},
		{"write-direct/64KB-jsonl", stream, func(s string) { _, _ = io.Discard.Write([]byte(s)) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.in)))
			for b.Loop() {
				c.run(c.in)
			}
			report(b, c.in)
		})
	}
}
