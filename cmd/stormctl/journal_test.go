package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

func TestJournalTailExportVerify(t *testing.T) {
	ctx := context.Background()
	r, s := seededStore(t)
	env := map[string]string{"STORMCTL_REDIS_URL": r.URL("", "")}

	out, stderr, code := runCLI(t, env, "journal", "tail", "-n", "1")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, "action.applied\tbob\tbreaker payments open\tp99 4s\tapplied") {
		t.Fatalf("tail: %d %q %s", code, out, stderr)
	}
	out, _, _ = runCLI(t, env, "journal", "tail", "-o", "json")
	if n, err := journal.Verify(journal.ReadRecords(strings.NewReader(out), "tail"), ""); err != nil || n != 2 {
		t.Fatalf("tail -o json is not the stored chain: %d %v", n, err)
	}

	if out, _, code = runCLI(t, env, "journal", "verify"); code != 0 || !strings.HasPrefix(out, "journal verified: 2 entries") {
		t.Fatalf("verify: %d %q", code, out)
	}

	dir := t.TempDir()
	saved := filepath.Join(dir, "journal.jsonl")
	if _, stderr, code = runCLI(t, env, "journal", "export", "--format", "jsonl", "--out", saved); code != 0 || !strings.Contains(stderr, "exported 2 entries") {
		t.Fatalf("export jsonl: %d %s", code, stderr)
	}
	// Saved files are read without Redis: point the URL at nothing.
	offline := map[string]string{"STORMCTL_REDIS_URL": "redis://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))}
	if out, stderr, code = runCLI(t, offline, "journal", "verify", "--file", saved); code != 0 || !strings.Contains(out, "2 entries") {
		t.Fatalf("verify --file: %d %s", code, stderr)
	}
	out, _, code = runCLI(t, offline, "journal", "export", "--format", "csv", "--file", saved, "--actor", "bob")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(rows) != 3 || rows[1][3] != "bob" || rows[2][2] != "journal.checkpoint" {
		t.Fatalf("csv: %d %v %q", code, err, rows)
	}
	out, _, code = runCLI(t, offline, "journal", "export", "--file", saved, "--incident", "INC-7")
	if code != 0 || !strings.Contains(out, "# Post-incident timeline: incident INC-7") || !strings.Contains(out, "**applied** breaker `open` on `payments`") {
		t.Fatalf("md: %d %s", code, out)
	}

	// Edit the saved file: verify names the entry and exits 4.
	data, _ := os.ReadFile(saved)
	os.WriteFile(saved, bytes.Replace(data, []byte(`"bob"`), []byte(`"eve"`), 1), 0o600)
	_, stderr, code = runCLI(t, offline, "journal", "verify", "--file", saved)
	if code != exit.CheckFailed || !strings.Contains(stderr, "entry 2") || !strings.Contains(stderr, "journal.jsonl:2") {
		t.Fatalf("tampered file: exit %d, %s", code, stderr)
	}
	// Remove an entry from the stream itself.
	msgs, _ := s.Client().XRange(ctx, s.Keys().Journal(), "-", "+").Result()
	s.Client().XDel(ctx, s.Keys().Journal(), msgs[0].ID)
	if _, stderr, code = runCLI(t, env, "journal", "verify"); code != exit.CheckFailed || !strings.Contains(stderr, "entry 1") {
		t.Fatalf("stream with a deleted entry: exit %d, %s", code, stderr)
	}

	for _, bad := range [][]string{{"--format", "pdf"}, {"--since", "yesterday"}, {"--until", "soon"}} {
		if _, _, code := runCLI(t, offline, append([]string{"journal", "export", "--file", saved}, bad...)...); code != exit.Usage {
			t.Errorf("export %v: exit %d, want 2", bad, code)
		}
	}
}

func TestJournalSyncCommand(t *testing.T) {
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	pending := filepath.Join(t.TempDir(), "pending.jsonl")
	for i := range 3 {
		if _, err := journal.AppendPending(pending, journal.Entry{Event: journal.Note, Actor: "alice", Reason: "offline " + strconv.Itoa(i), Time: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"STORMCTL_REDIS_URL": r.URL("", ""), journal.EnvPending: pending}
	out, stderr, code := runCLI(t, env, "journal", "sync")
	if code != 0 || !strings.Contains(out, "synced 3 entries") {
		t.Fatalf("sync: %d %q %s", code, out, stderr)
	}
	if out, _, _ = runCLI(t, env, "journal", "sync", "-o", "json"); !strings.Contains(out, `"appended": 0`) {
		t.Fatalf("second sync: %q", out)
	}
	if out, _, code = runCLI(t, env, "journal", "verify"); code != 0 || !strings.Contains(out, "3 entries") {
		t.Fatalf("verify after sync: %d %q", code, out)
	}
}
