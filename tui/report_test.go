package tui

import (
	"context"
	"errors"
	"testing"
)

type fakeReporter struct {
	incidents []string
	err       error
}

func (f *fakeReporter) WriteReport(_ context.Context, incident string) (string, []string, error) {
	f.incidents = append(f.incidents, incident)
	if f.err != nil {
		return "", nil, f.err
	}
	return "/tmp/stormctl-report-" + incident + ".html", []string{"pool_saturation: no data in the incident window"}, nil
}

func TestReportKey(t *testing.T) {
	w := newWorld()
	rep := &fakeReporter{}
	deps := w.deps()
	deps.Report = rep
	h := newHarness(t, w.c, deps, Options{Actor: "alice", Incident: "01INC"}, 200, 60)
	h.key("w")
	h.settle()
	if len(rep.incidents) != 1 || rep.incidents[0] != "01INC" {
		t.Fatalf("report written for %q, want once for the dashboard's incident", rep.incidents)
	}
	h.contains("report written: /tmp/stormctl-report-01INC.html (warning: pool_saturation: no data")
	h.key("?")
	h.contains("write the HTML incident report")

	rep.err = errors.New("redis 127.0.0.1:6379: connection refused")
	h.key("esc", "w")
	h.settle()
	h.contains("report: redis 127.0.0.1:6379: connection refused")

	// Without a reporter the key is off and not offered.
	h = newHarness(t, w.c, w.deps(), Options{Actor: "alice"}, 200, 60)
	h.key("?")
	h.lacks("write the HTML incident report")
}
