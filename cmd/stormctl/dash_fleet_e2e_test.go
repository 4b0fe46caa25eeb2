package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
)

// TestDashboardFleetEndToEnd opens the real binary's dashboard in tmux on
// a real Prometheus holding 1,000 services × 3 dependencies: the fleet
// view with its counts and the storms on top, enter into a service, esc
// back.
func TestDashboardFleetEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds the binary and drives it in tmux")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: `make deps` installs it (apt-get install -y tmux)")
	}
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: fleetFixture(1000).OpenMetrics()})
	dir := t.TempDir()
	bin := filepath.Join(dir, "stormctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	env := []string{"STORMCTL_CONFIG=" + os.DevNull, "STORMCTL_ACTOR=e2e", "NO_COLOR=1",
		"STORMCTL_PROMETHEUS_URL=" + prom.URL, "STORMCTL_REDIS_URL=redis://127.0.0.1:1"}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("stormctl-fleet-%d", os.Getpid())}
	t.Cleanup(func() { _, _ = s.tmux("kill-server") })
	cmd := fmt.Sprintf("env %s %s dash --read-only --refresh 5s 2>%s", strings.Join(env, " "), bin, filepath.Join(dir, "dash.err"))
	if out, err := s.tmux("new-session", "-d", "-s", "dash", "-x", "160", "-y", "48", "-c", dir, cmd); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	s.waitFor("the fleet's counts", regexp.MustCompile(`amplification: 3 crit, 4 warn of 3,000 series`), 60*time.Second)
	s.waitFor("the storms first", regexp.MustCompile(`(?s)Fleet: worst first.*svc-0017\s+CRIT 2 signals.*svc-0500\s+CRIT.*svc-0998\s+CRIT.*svc-0005\s+WARN`), 10*time.Second)
	s.keys("Enter")
	s.waitFor("svc-0017's panels", regexp.MustCompile(`Signals: svc-0017 \(esc: back to the fleet\)`), 30*time.Second)
	s.waitFor("its three dependencies", regexp.MustCompile(`(?s)amplification\s+svc-0017→ledger.*amplification\s+svc-0017→payments\s+4\.00 . CRIT.*amplification\s+svc-0017→search`), 30*time.Second)
	s.keys("Escape")
	s.waitFor("the fleet again", regexp.MustCompile(`(?s)Fleet: worst first.*svc-0017\s+CRIT`), 30*time.Second)
	s.keys("q")
}
