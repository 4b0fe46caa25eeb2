package main

import (
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
)

// The storm fixture: 45 minutes of the stormctl metric contract at 15 s
// steps, ending five minutes from now, so that a slow run cannot age the
// last samples out of a rate window while it runs. checkout → payments is
// normal (one attempt per request) until 15 minutes ago, then every
// request makes four attempts (three of them timed-out retries) and
// checkout's pool fills. ledger → db stays healthy throughout, and
// billing → tax has no requests at all.
const (
	fixtureStep    = 15 * time.Second
	fixtureSamples = 45 * 4
	stormFrom      = 25 * 4 // sample index where the storm starts (20m before the end, 15m ago)
)

func fixtureEnd() time.Time { return time.Now().Truncate(fixtureStep).Add(5 * time.Minute) }

// profile returns per-sample values: normal before the storm, storm after.
func profile(normal, storm float64) []float64 {
	v := make([]float64, fixtureSamples)
	for i := range v {
		v[i] = normal
		if i >= stormFrom {
			v[i] = storm
		}
	}
	return v
}

func stormFixture(end time.Time) string {
	start := end.Add(-fixtureStep * (fixtureSamples - 1))
	om := testenv.NewOpenMetrics()
	counter := func(name string, labels map[string]string, normal, storm float64) {
		om.Counter(name, labels, start, fixtureStep, testenv.Cumulate(profile(normal, storm), fixtureStep))
	}
	cp := map[string]string{"service": "checkout", "dependency": "payments"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for a, b := range cp {
			m[a] = b
		}
		return m
	}
	counter("stormctl_requests_total", cp, 100, 100)
	counter("stormctl_attempts_total", with("outcome", "success"), 100, 100)
	counter("stormctl_attempts_total", with("outcome", "timeout"), 0, 300)
	counter("stormctl_retries_total", with("reason", "timeout"), 0, 300)

	ld := map[string]string{"service": "ledger", "dependency": "db"}
	counter("stormctl_requests_total", ld, 50, 50)
	counter("stormctl_attempts_total", map[string]string{"service": "ledger", "dependency": "db", "outcome": "success"}, 50, 50)
	counter("stormctl_requests_total", map[string]string{"service": "billing", "dependency": "tax"}, 0, 0)
	counter("stormctl_attempts_total", map[string]string{"service": "billing", "dependency": "tax", "outcome": "success"}, 0, 0)

	om.Gauge("stormctl_pool_in_use", map[string]string{"service": "checkout", "pool": "http"}, start, fixtureStep, profile(40, 196))
	om.Gauge("stormctl_pool_capacity", map[string]string{"service": "checkout", "pool": "http"}, start, fixtureStep, profile(200, 200))
	return om.String()
}
