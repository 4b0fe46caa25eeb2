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

// tmuxSession is one dashboard running in a detached tmux server of its
// own, driven by send-keys and read by capture-pane.
type tmuxSession struct {
	t      *testing.T
	socket string
}

func (s *tmuxSession) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	return string(out), err
}

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	if out, err := s.tmux(append([]string{"send-keys", "-t", "dash"}, keys...)...); err != nil {
		s.t.Fatalf("send-keys %v: %v: %s", keys, err, out)
	}
}

func (s *tmuxSession) text(text string) { s.keys("-l", text) }

func (s *tmuxSession) screen() string {
	out, _ := s.tmux("capture-pane", "-p", "-t", "dash")
	return out
}

// waitFor polls the screen until re matches it.
func (s *tmuxSession) waitFor(what string, re *regexp.Regexp, within time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		scr := s.screen()
		if re.MatchString(scr) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("waited %s for %s (%s); the screen:\n%s", within, what, re, scr)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (s *tmuxSession) ended() bool {
	_, err := s.tmux("has-session", "-t", "dash")
	return err != nil
}

// TestDashboardEndToEnd drives `stormctl demo` in tmux against the lab and
// a real redis-server: the storm breaches, the playbook's action step runs
// through the dialog, the lever appears, amplification falls, and the
// action is in the exported journal.
func TestDashboardEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs a storm in real time (about two minutes)")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: `make deps` installs it (apt-get install -y tmux); skipping the terminal end-to-end test")
	}
	rd := testenv.StartRedis(t, testenv.RedisOptions{})
	dir := t.TempDir()
	bin := filepath.Join(dir, "stormctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// gateway-blip with the blip at 15s instead of 2m, so the test waits
	// less for the storm; everything else is the built-in scenario.
	src, err := os.ReadFile("../../lab/sim/scenarios/gateway-blip.yaml")
	if err != nil {
		t.Fatal(err)
	}
	scenario := strings.Replace(strings.Replace(string(src), "name: gateway-blip", "name: gateway-blip-e2e", 1), "at: 2m", "at: 15s", 1)
	scFile := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(scFile, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	env := []string{"STORMCTL_CONFIG=" + os.DevNull, "STORMCTL_ACTOR=e2e", "XDG_STATE_HOME=" + state, "NO_COLOR=1"}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("stormctl-e2e-%d", os.Getpid())}
	t.Cleanup(func() { _, _ = s.tmux("kill-server") })
	cmd := fmt.Sprintf("env %s %s demo --scenario %s --redis-url %s --refresh 2s 2>%s",
		strings.Join(env, " "), bin, scFile, rd.URL("", ""), filepath.Join(dir, "demo.err"))
	// In dir, the working directory: the reports must not land there.
	if out, err := s.tmux("new-session", "-d", "-s", "dash", "-x", "200", "-y", "60", "-c", dir, cmd); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}

	s.waitFor("the dashboard", regexp.MustCompile(`Playbook retry-amplification`), 30*time.Second)
	// The retries hide the slow instance for about 45 s before amplification
	// passes 1.3 over its one-minute window.
	s.waitFor("amplification to breach", regexp.MustCompile(`amplification\s+[\d.]+ . CRIT`), 150*time.Second)

	// README.md's step 2, key by key; after each Enter the screen must show
	// what the README says happens next.
	after := map[int]struct {
		what string
		re   *regexp.Regexp
	}{
		1: {"the check to pass", regexp.MustCompile(`✓ check\s+Retries are now the load`)},
		2: {"no 429s retried", regexp.MustCompile(`✗ check\s+The caller retries the dependency's 429s`)},
		3: {"the requests still succeed", regexp.MustCompile(`✓ check\s+No 429s are retried`)},
		4: {"the plan", regexp.MustCompile(`(?s)✓ evidence.*Type checkout->payment-gateway to confirm`)},
		5: {"the step to pass", regexp.MustCompile(`step retries-cap passed: applied retries=cap:2`)},
	}
	for _, k := range readmeStormKeys(t) {
		if k.text != "" {
			s.text(k.text)
		}
		if len(k.keys) > 0 {
			s.keys(k.keys...)
		}
		if w, ok := after[k.enter]; ok {
			s.waitFor(w.what, w.re, 30*time.Second)
		}
	}
	s.waitFor("the dialog to close and the lever to show", regexp.MustCompile(`retries checkout->payment-gateway=cap:2  \d+m\d+s left`), 10*time.Second)
	// The selection stays on the action step, marked (NO_COLOR) with ›.
	s.waitFor("the selection on the action step", regexp.MustCompile(`›\S* ✓ action Cap the caller's retries at 2`), 10*time.Second)
	s.waitFor("amplification to fall", regexp.MustCompile(`amplification\s+[\d.]+ . (ok|WARN)`), 150*time.Second)

	s.keys("w")
	s.waitFor("the report", regexp.MustCompile(`report written: \S+stormctl-report-\w+\.html`), 60*time.Second)

	s.keys("q")
	deadline := time.Now().Add(30 * time.Second)
	for !s.ended() && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	// The demo's exit names the incident's HTML report, drawn from the lab,
	// written under the state directory, not the working directory; and it
	// points at nothing that needs the control plane it stopped.
	stderr, _ := os.ReadFile(filepath.Join(dir, "demo.err"))
	m := regexp.MustCompile(`demo: the incident's HTML report: (\S+)`).FindSubmatch(stderr)
	if reports := filepath.Join(state, "stormctl", "reports"); m == nil || filepath.Dir(string(m[1])) != reports {
		t.Fatalf("the demo did not print its report's path in %s:\n%s", reports, stderr)
	}
	if strings.Contains(string(stderr), "journal export --incident") {
		t.Errorf("the demo's exit suggests a command against its stopped control plane:\n%s", stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "stormctl-report-*.html")); len(left) > 0 {
		t.Errorf("reports in the working directory: %v", left)
	}
	report, err := os.ReadFile(string(m[1]))
	if err != nil || !strings.Contains(string(report), `<figure class="chart" id="chart-amplification">`) ||
		strings.Count(figure(t, string(report), "amplification"), `<path class="series`) == 0 {
		t.Errorf("the demo's report has no amplification chart: %v", err)
	}
	export := exec.Command(bin, "journal", "export", "--redis-url", rd.URL("", ""))
	export.Env = append(os.Environ(), env...)
	out, err := export.CombinedOutput()
	if err != nil {
		t.Fatalf("journal export: %v\n%s", err, out)
	}
	for _, want := range []string{"**applied** retries `cap:2` on `checkout->payment-gateway`", "retries-cap", "e2e"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("journal export lacks %q:\n%s", want, out)
		}
	}
}
