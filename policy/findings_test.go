package policy

import (
	"slices"
	"testing"
)

// TestFindingIDs: each stable finding id fires, with its severity and hop,
// on a path that has just that problem, and carries a message and a fix.
func TestFindingIDs(t *testing.T) {
	const head = "apiVersion: stormctl/v1\nkind: CallPath\nname: f\nrate: 100/s\n"
	const good = "retry: {attempts: 2, base: 100ms, jitter: full, on: [5xx], budget: 10%, idempotency_key: true}"
	for _, tc := range []struct {
		id, hop string
		sev     Severity
		path    string
	}{
		{MultipliedRetries, "", Warn, "deadline: 5s\nhops:\n  - {service: a, pool: {size: 1000}, timeout: 1s, " + good + "}\n" +
			"  - {service: b, pool: {size: 1000}, timeout: 1s, " + good + "}\n"},
		{DeadlineConflict, "b", Crit, "hops:\n  - {service: a, pool: {size: 1000}, timeout: 1s}\n" +
			"  - {service: b, pool: {size: 1000}, timeout: 1s, retry: {attempts: 2, base: 100ms, jitter: full, on: [timeout], budget: 10%, idempotency_key: true}}\n"},
		{TimeoutBelowDependencyP99, "a", Warn, "hops:\n  - {service: a, pool: {size: 1000}, timeout: 200ms}\ndependency: {name: d, p99: 900ms}\n"},
		{NoBackoff, "a", Warn, "hops:\n  - {service: a, pool: {size: 1000}, timeout: 1s, retry: {attempts: 2, on: [connect_error], budget: 10%}}\n"},
		{NoBackoff, "a", Crit, "hops:\n  - {service: a, pool: {size: 1000}, timeout: 1s, retry: {attempts: 2, on: [5xx], budget: 10%, idempotency_key: true}}\n"},
		{NoJitter, "a", Warn, "hops:\n  - {service: a, pool: {size: 1000}, timeout: 1s, retry: {attempts: 2, base: 100ms, on: [5xx], budget: 10%, idempotency_key: true}}\n"},
		{RetriesThrottling, "a", Crit, "hops:\n  - {service: a, pool: {size: 1000}, timeout: 1s, retry: {attempts: 2, base: 100ms, jitter: full, on: [429], budget: 10%}}\n"},
		{NoRetryBudget, "a", Warn, "hops:\n  - {service: a, pool: {size: 1000}, timeout: 1s, retry: {attempts: 2, base: 100ms, jitter: full, on: [5xx], idempotency_key: true}}\n"},
		{SharedPool, "a", Warn, "hops:\n  - {service: a, pool: {size: 1000, shared: true}, timeout: 1s}\n"},
		{TransportRetryStacked, "client", Warn, "hops:\n  - {service: a, pool: {size: 1000}, timeout: 1s, " + good + "}\n" +
			"  - {service: client, retry: {attempts: 2, base: 10ms, jitter: full, on: [connect_error], budget: 10%}}\n"},
		{NonIdempotentRetry, "a", Warn, "hops:\n  - {service: a, pool: {size: 1000}, timeout: 1s, retry: {attempts: 2, base: 100ms, jitter: full, on: [timeout], budget: 10%}}\n"},
		{BreakerPerProcess, "a", Warn, "hops:\n  - {service: a, pool: {size: 1000}, timeout: 1s, breaker: {scope: pod}}\n"},
		{PoolSaturation, "a", Crit, "hops:\n  - {service: a, pool: {size: 50}, timeout: 1s}\n"},
		{NoTimeout, "", Crit, "hops:\n  - {service: a, pool: {size: 1000}}\n"},
	} {
		t.Run(tc.id+"/"+string(tc.sev), func(t *testing.T) {
			p, err := Load([]Input{{Name: tc.id + ".yaml", Data: []byte(head + tc.path)}}, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a := Analyze(p)
			var got []string
			found := false
			for _, f := range a.Findings {
				got = append(got, f.ID+"@"+f.Hop+":"+string(f.Severity))
				if f.ID == tc.id && f.Hop == tc.hop && f.Severity == tc.sev {
					found = found || f.Message != "" && f.Fix != ""
				}
			}
			if !found {
				t.Errorf("want %s@%s:%s with a message and a fix, got %v", tc.id, tc.hop, tc.sev, got)
			}
			// The path has that one problem: anything else is at most the
			// multiplied_retries a two-layer case needs.
			for _, f := range a.Findings {
				if f.ID != tc.id && !(tc.id == TransportRetryStacked && f.ID == MultipliedRetries) {
					t.Errorf("unexpected %s@%s: %s", f.ID, f.Hop, f.Message)
				}
			}
		})
	}
}

// TestFleetBreaker: a breaker whose state is shared across the fleet is
// not a finding.
func TestFleetBreaker(t *testing.T) {
	p, err := Load([]Input{{Name: "fleet.yaml", Data: []byte("apiVersion: stormctl/v1\nkind: CallPath\nhops:\n  - {service: a, timeout: 1s, breaker: {scope: fleet}}\n")}}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := Analyze(p); slices.ContainsFunc(a.Findings, func(f Finding) bool { return f.ID == BreakerPerProcess }) {
		t.Errorf("fleet breaker reported: %+v", a.Findings)
	}
}
