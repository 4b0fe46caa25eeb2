package journal

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// writeJournal writes a chained JSON Lines journal of n entries: actions
// applied on rotating targets, each ended by a release or an expiry, with
// notes between, as a long incident would produce.
func writeJournal(b *testing.B, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	prev := ""
	ev := []Evidence{{Query: "amplification", Pack: "envoy", Value: 3.2, Threshold: "> 1.3", Status: "firing", Time: t0}}
	var open *LeverState
	for i := range n {
		ts := t0.Add(time.Duration(i) * time.Second)
		e := Entry{ID: fmt.Sprintf("E%07d", i), Time: ts, Actor: "alice", RedisUser: "responder", Incident: fmt.Sprintf("INC-%d", i/10000),
			Step: AdHoc, Kind: "retries", Target: fmt.Sprintf("svc-%d->db", i%50), Value: "off", Reason: "amplification above 1.3"}
		switch {
		case open == nil:
			open = &LeverState{Value: "off", ActionID: fmt.Sprintf("A%07d", i), Actor: "alice", CreatedAt: ts, ExpiresAt: ts.Add(30 * time.Minute), Version: int64(i)}
			e.Event, e.ActionID, e.TTL, e.Evidence, e.New, e.Outcome = ActionApplied, open.ActionID, Duration(30*time.Minute), ev, open, "applied"
		case i%3 == 0:
			e.Event, e.ActionID, e.Previous, e.Outcome = ActionReleased, open.ActionID, open, "released"
			open = nil
		case i%3 == 1:
			e.Event, e.ActionID, e.Previous, e.Outcome, e.Actor = ActionExpired, open.ActionID, open, "expired", "stormctl (expiry)"
			open = nil
		default:
			e.Event, e.Kind, e.Target, e.Value = Note, "", "", ""
		}
		sealed, stored, err := e.Seal(prev)
		if err != nil {
			b.Fatal(err)
		}
		prev = sealed.Hash
		w.Write(stored)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
}

// firstN stops recs after n records.
func firstN(recs iter.Seq2[Record, error], n int) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		i := 0
		for r, err := range recs {
			if i == n || !yield(r, err) {
				return
			}
			i++
		}
	}
}

// peakHeap runs fn and returns how far the live heap grew above where it
// started, sampled every few milliseconds.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var s runtime.MemStats
			runtime.ReadMemStats(&s)
			if s.HeapAlloc > base && s.HeapAlloc-base > peak.Load() {
				peak.Store(s.HeapAlloc - base)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	return peak.Load()
}

// BenchmarkExport exports 100,000 and then 1,000,000 entries from a JSON
// Lines journal and reports the time per million entries and the heap
// growth for each size: streaming keeps the 1M figure near the 100k one.
// The baseline is reading the same file's lines without decoding them.
// Run with -benchtime=1x; generating the file takes a few seconds.
func BenchmarkExport(b *testing.B) {
	const small, large = 100_000, 1_000_000
	path := filepath.Join(b.TempDir(), "journal.jsonl")
	writeJournal(b, path, large)
	// Baseline: only reading the lines of the file, no decoding or output.
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for _, err := range ReadRecords(f, path) {
		if err != nil {
			b.Fatal(err)
		}
	}
	readOnly := time.Since(start)
	f.Close()
	for _, format := range []Format{CSV, Markdown} {
		b.Run(string(format), func(b *testing.B) {
			export := func(n int) (time.Duration, uint64) {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				var took time.Duration
				peak := peakHeap(func() {
					start := time.Now()
					got, err := Export(io.Discard, format, firstN(ReadRecords(f, path), n), Filter{})
					took = time.Since(start)
					if err != nil || got != n {
						b.Fatalf("exported %d of %d: %v", got, n, err)
					}
				})
				return took, peak
			}
			for b.Loop() {
				_, smallPeak := export(small)
				took, largePeak := export(large)
				b.ReportMetric(took.Seconds(), "s/1M-entries")
				b.ReportMetric(took.Seconds()/readOnly.Seconds(), "x-read-only")
				b.ReportMetric(float64(smallPeak)/(1<<20), "heap-MB-100k")
				b.ReportMetric(float64(largePeak)/(1<<20), "heap-MB-1M")
				b.ReportMetric(float64(largePeak)/float64(max(smallPeak, 1)), "heap-ratio-1M/100k")
			}
		})
	}
}
