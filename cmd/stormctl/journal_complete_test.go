package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

// TestWipedJournalFailsVerify: a journal emptied (a wipe, or a failover to a
// replica that had nothing) fails verify when an unsigned checkpoint or this
// machine's high-water mark says more existed.
func TestWipedJournalFailsVerify(t *testing.T) {
	ctx := context.Background()
	e := newActionEnv(t)
	e.env["SSH_AUTH_SOCK"] = ""
	for _, target := range []string{"checkout->payments", "checkout"} {
		if _, errOut, code := e.run("alice", append([]string{"retries", "off", target}, applyArgs...)...); code != 0 {
			t.Fatal(errOut)
		}
	}
	// No signing key: the checkpoint is written, unsigned and marked so.
	cpFile := filepath.Join(t.TempDir(), "cp.json")
	_, errOut, code := e.run("alice", "journal", "checkpoint", "--out", cpFile)
	if code != 0 || !strings.Contains(errOut, "unsigned checkpoint of 2 entries") {
		t.Fatalf("checkpoint: %d %s", code, errOut)
	}
	var cp journal.Checkpoint
	data, _ := os.ReadFile(cpFile)
	if err := json.Unmarshal(data, &cp); err != nil || !cp.Unsigned || cp.Signature != "" || cp.Count != 2 {
		t.Fatalf("%v %s", err, data)
	}
	if out, errOut, code := e.run("carol", "journal", "verify"); code != 0 || !strings.Contains(out, "journal verified: 2 entries") {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}

	opts, _ := redis.ParseURL(e.env["STORMCTL_REDIS_URL"])
	c := redis.NewClient(opts)
	defer c.Close()
	k := controlplane.NewKeys("cli")
	if err := c.Del(ctx, k.Journal(), k.JournalHead()).Err(); err != nil {
		t.Fatal(err)
	}

	t.Run("with a checkpoint", func(t *testing.T) {
		_, errOut, code := e.run("carol", "journal", "verify", "--no-local-mark", "--checkpoint", cpFile)
		if code != exit.CheckFailed || !strings.Contains(errOut, "recorded 2 entries, the journal has 0: entries were cut from its end") {
			t.Fatalf("%d %s", code, errOut)
		}
		if _, errOut, code := e.run("carol", "journal", "verify", "--no-local-mark"); code != 0 {
			t.Fatalf("nothing to hold it to: %d %s", code, errOut)
		}
	})
	t.Run("with the local high-water mark", func(t *testing.T) {
		out, errOut, code := e.run("carol", "journal", "verify")
		if code != exit.CheckFailed || !strings.Contains(errOut, "local high-water mark") || !strings.Contains(errOut, "recorded 2 entries, the journal has 0") ||
			!strings.Contains(out, "FAILED") {
			t.Fatalf("%d %s %s", code, out, errOut)
		}
	})
}

// TestStatusReportsLoss: status holds the journal to this machine's mark;
// when it went back, status says so, journals controlplane.lost once, and
// keeps reporting it from the journal.
func TestStatusReportsLoss(t *testing.T) {
	ctx := context.Background()
	e := newActionEnv(t)
	for _, target := range []string{"checkout->payments", "checkout"} {
		if _, errOut, code := e.run("alice", append([]string{"retries", "off", target}, applyArgs...)...); code != 0 {
			t.Fatal(errOut)
		}
	}
	_, errOut, code := e.run("alice", "status")
	if code != 0 || strings.Contains(errOut, "LOST") || !strings.Contains(errOut, "replication: master, replicas: 0") {
		t.Fatalf("%d %s", code, errOut)
	}
	opts, _ := redis.ParseURL(e.env["STORMCTL_REDIS_URL"])
	c := redis.NewClient(opts)
	defer c.Close()
	k := controlplane.NewKeys("cli")
	c.Del(ctx, k.Journal(), k.JournalHead(), k.Lever("retries", "checkout"), k.Index())
	for range 2 {
		out, errOut, code := e.run("carol", "status", "-o", "json")
		var st struct {
			Loss *statusLoss `json:"loss"`
		}
		if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Loss == nil || !strings.Contains(st.Loss.Detail, "journal went back: 2 entries after the start") {
			t.Fatalf("%d %v %s %s", code, err, out, errOut)
		}
	}
	if n := c.XLen(ctx, k.Journal()).Val(); n != 1 {
		t.Fatalf("want one controlplane.lost entry, journal has %d entries", n)
	}
}
