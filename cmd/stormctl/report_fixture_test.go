package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

// The report fixture: a retry storm on a fixed date, so its report is a
// golden file. checkout → payments is normal until 10:02, when payments
// slows down and every request makes four attempts; retries are turned
// off at 10:06 and the attempts fall back to one per request at 10:07;
// the edge error rate lags, and falls under 5% at 10:10; payments' p99
// is back at 10:12. The metrics are the stormctl contract as Prometheus
// stores them after scraping checkout: with job and instance labels.
var (
	reportT0    = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	reportStep  = 15 * time.Second
	reportStart = reportT0.Add(-20 * time.Minute)
	reportEnd   = reportT0.Add(40 * time.Minute)
)

func rat(min, sec int) time.Time {
	return reportT0.Add(time.Duration(min)*time.Minute + time.Duration(sec)*time.Second)
}

// phase returns, per sample, normal before from, storm in [from, to), and
// after from to on.
func phase(from, to time.Time, normal, storm, after float64) []float64 {
	var v []float64
	for t := reportStart; !t.After(reportEnd); t = t.Add(reportStep) {
		switch {
		case t.Before(from):
			v = append(v, normal)
		case t.Before(to):
			v = append(v, storm)
		default:
			v = append(v, after)
		}
	}
	return v
}

func reportMetrics() string {
	om := testenv.NewOpenMetrics()
	scrape := func(extra map[string]string) map[string]string {
		m := map[string]string{"job": "checkout", "instance": "10.0.3.17:9090", "service": "checkout"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cp := func(k, v string) map[string]string {
		m := scrape(map[string]string{"dependency": "payments"})
		if k != "" {
			m[k] = v
		}
		return m
	}
	storm, off := rat(2, 0), rat(7, 0)
	counter := func(name string, labels map[string]string, rates []float64) {
		om.Counter(name, labels, reportStart, reportStep, testenv.Cumulate(rates, reportStep))
	}
	counter("stormctl_requests_total", cp("", ""), phase(storm, off, 100, 100, 100))
	counter("stormctl_attempts_total", cp("outcome", "success"), phase(storm, off, 100, 100, 100))
	counter("stormctl_attempts_total", cp("outcome", "timeout"), phase(storm, off, 0, 300, 0))
	counter("stormctl_retries_total", cp("reason", "timeout"), phase(storm, off, 0, 300, 0))
	edge := func(code string) map[string]string { return scrape(map[string]string{"code": code}) }
	counter("stormctl_server_requests_total", edge("200"), phase(storm, rat(10, 0), 99.5, 80, 99.5))
	counter("stormctl_server_requests_total", edge("503"), phase(storm, rat(10, 0), 0.5, 20, 0.5))
	om.Gauge("stormctl_pool_in_use", scrape(map[string]string{"pool": "http"}), reportStart, reportStep, phase(storm, off, 40, 196, 40))
	om.Gauge("stormctl_pool_capacity", scrape(map[string]string{"pool": "http"}), reportStart, reportStep, phase(storm, off, 200, 200, 200))
	om.Gauge("stormctl_pool_waiting", scrape(map[string]string{"pool": "http"}), reportStart, reportStep, phase(storm, off, 0, 150, 0))

	les := []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, math.Inf(1)}
	normal := []float64{50, 100, 100, 100, 100, 100, 100, 100}
	slow := []float64{10, 20, 30, 40, 50, 390, 400, 400}
	rates := phase(storm, rat(12, 0), 0, 1, 0) // 1 while payments is slow
	buckets := make([][]float64, len(rates))
	sums := make([]float64, len(rates))
	for i, r := range rates {
		buckets[i] = make([]float64, len(les))
		prev := 0.0
		if i > 0 {
			prev = sums[i-1]
		}
		for j := range les {
			rate := normal[j]
			if r == 1 {
				rate = slow[j]
			}
			buckets[i][j] = rate * reportStep.Seconds()
			if i > 0 {
				buckets[i][j] += buckets[i-1][j]
			}
		}
		sums[i] = prev + map[bool]float64{true: 400 * 1.9, false: 100 * 0.06}[r == 1]*reportStep.Seconds()
	}
	om.Histogram("stormctl_attempt_duration_seconds", cp("", ""), reportStart, reportStep, les, buckets, sums)
	return om.String()
}

// reportEntries is the incident as the journal recorded it.
func reportEntries() []journal.Entry {
	amp := []journal.Evidence{{Query: "amplification", Pack: "stormctl", Value: 4, Threshold: "warn > 1.2, crit > 1.3 for 1m", Status: "crit", Time: rat(5, 50)}}
	lv := func(value, id, actor string, created time.Time, ttl time.Duration) *journal.LeverState {
		return &journal.LeverState{Value: value, ActionID: id, Actor: actor, Reason: "retry storm", Incident: "INC-42",
			CreatedAt: created, ExpiresAt: created.Add(ttl), Version: 1}
	}
	retOff := lv("off", "A1", "alice", rat(6, 0), 30*time.Minute)
	brk := lv("open", "B1", "bob", rat(8, 0), 5*time.Minute)
	pb := func(e journal.Entry) journal.Entry {
		e.Playbook, e.PlaybookVersion = "retry-amplification", "2"
		return e
	}
	es := []journal.Entry{
		{Time: rat(4, 0), Event: journal.IncidentOpened, Actor: "alice", Reason: "checkout 5xx; payments slow", Outcome: "opened"},
		pb(journal.Entry{Time: rat(5, 0), Event: journal.PlaybookStarted, Actor: "alice", Step: "start"}),
		pb(journal.Entry{Time: rat(6, 0), Event: journal.ActionApplied, Actor: "alice", Step: "retries-off", ActionID: "A1",
			Kind: "retries", Target: "checkout->payments", Value: "off", TTL: journal.Duration(30 * time.Minute),
			Reason: "amplification 4 <script>alert(1)</script> \x1b[31mred\x1b[0m", Evidence: amp, New: retOff, Outcome: "applied"}),
		pb(journal.Entry{Time: rat(6, 5), Event: journal.PlaybookPassed, Actor: "alice", Step: "retries-off"}),
		{Time: rat(7, 0), Event: journal.ActionRefused, Actor: "carol", Kind: "breaker", Target: "payments", Value: "open",
			Reason: "p99 high", Outcome: "refused", Error: "evidence: dependency_p99 needs --force"},
		{Time: rat(8, 0), Event: journal.ActionApplied, Actor: "bob", ActionID: "B1", Kind: "breaker", Target: "payments",
			Value: "open", TTL: journal.Duration(5 * time.Minute), Reason: "p99 above timeout", Forced: true, New: brk, Outcome: "applied"},
		{Time: rat(13, 0), Event: journal.ActionExpired, Actor: "stormctl (expiry)", ActionID: "B1", Kind: "breaker",
			Target: "payments", Value: "open", Reason: "its TTL ran out", Previous: brk, Outcome: "expired"},
		{Time: rat(15, 0), Event: journal.ActionReleased, Actor: "alice", ActionID: "A1", Kind: "retries", Target: "checkout->payments",
			Value: "off", Reason: "payments healthy", Previous: retOff, Outcome: "released"},
		pb(journal.Entry{Time: rat(15, 5), Event: journal.PlaybookFinished, Actor: "alice", Step: "finish"}),
		{Time: rat(20, 0), Event: journal.IncidentClosed, Actor: "alice", Outcome: "closed"},
	}
	for i := range es {
		es[i].ID = "E" + string(rune('A'+i))
		es[i].Incident, es[i].RedisUser = "INC-42", "responder"
		if es[i].Step == "" {
			es[i].Step = journal.AdHoc
		}
	}
	return es
}

// writeJournal seals entries into a chain and saves it as JSON Lines.
func writeJournal(t testing.TB, entries []journal.Entry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	var data []byte
	prev := ""
	for _, e := range entries {
		sealed, stored, err := e.Seal(prev)
		if err != nil {
			t.Fatal(err)
		}
		prev = sealed.Hash
		data = append(append(data, stored...), '\n')
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
