package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
)

// silentPrometheus accepts connections and never answers, as a Prometheus
// stuck in a long GC or behind a dead proxy does.
func silentPrometheus(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// TestForceBoundsTheEvidenceWait: --force needs no evidence, so it waits
// at most two seconds for it and says that it did not wait longer.
func TestForceBoundsTheEvidenceWait(t *testing.T) {
	e := newActionEnv(t)
	// One read while Prometheus answers caches the names for validation.
	e.expect(exit.OK, "alice", "action", "plan", "retries", "checkout->payments", "off", "--ttl", "10m", "--reason", "amplification 4x")
	e.env["STORMCTL_PROMETHEUS_URL"] = silentPrometheus(t)
	start := time.Now()
	res, msg := e.expect(exit.OK, "alice", append([]string{"retries", "off", "checkout->payments", "--force", "-o", "json"}, applyArgs...)...)
	took := time.Since(start)
	if res["forced"] != true {
		t.Fatalf("forced apply: %v\n%s", res, msg)
	}
	if en := lastApplied(e.journalEntries(), "checkout->payments"); en == nil || !strings.Contains(en.Outcome+msg+strings.Join(guardDetails(res), " "), "--force does not wait longer") {
		t.Fatalf("the result must say that --force did not wait longer: %v\n%s", res, msg)
	}
	if took > 7*time.Second {
		t.Fatalf("forced apply took %v against a silent Prometheus", took)
	}
	t.Logf("forced apply against a silent Prometheus took %v", took.Round(time.Millisecond))
}

func guardDetails(res map[string]any) []string {
	var out []string
	gs, _ := res["guards"].([]any)
	for _, g := range gs {
		if m, ok := g.(map[string]any); ok {
			d, _ := m["detail"].(string)
			out = append(out, d)
		}
	}
	return out
}
