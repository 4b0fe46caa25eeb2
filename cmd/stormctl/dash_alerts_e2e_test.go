package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
)

// TestDashboardAlertsEndToEnd runs the real dashboard in tmux with the
// context's alerts.alertmanager-url naming a real Alertmanager that holds
// one alert: the alerts section lists it; when Alertmanager stops, the
// section says it is unreachable, by address.
func TestDashboardAlertsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds stormctl and drives it in tmux")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: `make deps` installs it; skipping the terminal end-to-end test")
	}
	am := testenv.StartAlertmanager(t, "route: {receiver: none}\nreceivers: [{name: none}]\n")
	body, _ := json.Marshal([]map[string]any{{"labels": map[string]string{"alertname": "RetryStorm", "service": "checkout", "dependency": "payments"},
		"startsAt": time.Now().UTC(), "endsAt": time.Now().Add(time.Hour).UTC()}})
	resp, err := http.Post(am.URL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("post the alert: %v %v", resp, err)
	}
	resp.Body.Close()

	e := newActionEnv(t)
	cfg := "current-context: lab\ncontexts:\n  lab:\n    redis: {namespace: cli}\n    alerts: {alertmanager-url: \"" + am.URL + "\"}\n"
	if err := os.WriteFile(e.env["STORMCTL_CONFIG"], []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "stormctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var env []string
	for k, v := range e.env {
		env = append(env, k+"="+v)
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("stormctl-alerts-%d", os.Getpid())}
	t.Cleanup(func() { _, _ = s.tmux("kill-server") })
	cmd := fmt.Sprintf("env %s %s dash --refresh 2s 2>%s", strings.Join(env, " "), bin, filepath.Join(dir, "dash.err"))
	if out, err := s.tmux("-f", "/dev/null", "new-session", "-d", "-s", "dash", "-x", "200", "-y", "60", "-c", dir, cmd); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	s.waitFor("the alert", regexp.MustCompile(`Alerts \(1 firing, 0 silenced\)[\s\S]*● RetryStorm checkout→payments · firing`), 60*time.Second)
	am.Stop()
	s.waitFor("the outage", regexp.MustCompile(`alertmanager unreachable: `+regexp.QuoteMeta(am.URL)), 60*time.Second)
	s.keys("q")
}
