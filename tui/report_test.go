package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
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
	waitView(h, "report written")
	if len(rep.incidents) != 1 || rep.incidents[0] != "01INC" {
		t.Fatalf("report written for %q, want once for the dashboard's incident", rep.incidents)
	}
	h.contains("report written: /tmp/stormctl-report-01INC.html (warning: pool_saturation: no data")
	h.key("?")
	h.contains("write the HTML incident report")

	rep.err = errors.New("redis 127.0.0.1:6379: connection refused")
	h.key("esc", "w")
	waitView(h, "report: redis")
	h.contains("report: redis 127.0.0.1:6379: connection refused")

	// Without a reporter the key is off and not offered.
	h = newHarness(t, w.c, w.deps(), Options{Actor: "alice"}, 200, 60)
	h.key("?")
	h.lacks("write the HTML incident report")
}

// waitView delivers the results of the commands a key started until the
// view shows want: on a loaded machine a command may outlast settle.
func waitView(h *harness, want string) {
	h.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		h.settle()
		if strings.Contains(h.view(), want) {
			return
		}
	}
	h.contains(want)
}
