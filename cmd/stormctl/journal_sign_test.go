package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

// keygen makes an unencrypted ed25519 key with the real ssh-keygen and
// returns its path and public key line.
func keygen(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen not installed (Debian: openssh-client)")
	}
	path := filepath.Join(dir, name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	pub, _ := os.ReadFile(path + ".pub")
	return path, strings.TrimSpace(string(pub))
}

// signedEnv is an action environment where alice, bob and eve each have a
// key, all three in an allowed_signers file.
type signedEnv struct {
	*actionEnv
	dir, allowed string
	keys         map[string]string
	client       *redis.Client
	keysNS       controlplane.Keys
}

func newSignedEnv(t *testing.T) *signedEnv {
	e := &signedEnv{actionEnv: newActionEnv(t), dir: t.TempDir(), keys: map[string]string{}}
	e.env["SSH_AUTH_SOCK"] = "" // no agent of the machine running the tests
	var lines []string
	for _, name := range []string{"alice", "bob", "eve"} {
		path, pub := keygen(t, e.dir, name)
		e.keys[name] = path
		lines = append(lines, name+" "+pub)
	}
	e.allowed = filepath.Join(e.dir, "allowed_signers")
	os.WriteFile(e.allowed, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	opts, err := redis.ParseURL(e.env["STORMCTL_REDIS_URL"])
	if err != nil {
		t.Fatal(err)
	}
	e.client = redis.NewClient(opts)
	t.Cleanup(func() { e.client.Close() })
	e.keysNS = controlplane.NewKeys("cli")
	return e
}

// as runs stormctl as actor signing with key's file.
func (e *signedEnv) as(actor, key string, args ...string) (string, string, int) {
	e.t.Helper()
	e.env["STORMCTL_SIGNING_KEY"] = e.keys[key]
	return e.run(actor, args...)
}

func TestSignedJournalCLI(t *testing.T) {
	ctx := context.Background()
	e := newSignedEnv(t)
	mustRun := func(code int, actor, key string, args ...string) (string, string) {
		t.Helper()
		out, errOut, got := e.as(actor, key, args...)
		if got != code {
			t.Fatalf("%s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), got, code, out, errOut)
		}
		return out, errOut
	}
	mustRun(exit.OK, "alice", "alice", append([]string{"retries", "off", "checkout->payments"}, applyArgs...)...)
	mustRun(exit.OK, "bob", "bob", append([]string{"retries", "cap", "2", "checkout->payments", "--supersede"}, applyArgs...)...)
	mustRun(exit.OK, "bob", "bob", "incident", "open", "checkout retry storm")
	strict := []string{"journal", "verify", "--allowed-signers", e.allowed, "--require-signatures"}
	out, _ := mustRun(exit.OK, "carol", "alice", strict...)
	if !strings.Contains(out, "journal verified: 3 entries") || !strings.Contains(out, "3 of 3 entries signed by allowed signers whose principal is the entry's actor (alice 1, bob 2)") {
		t.Fatalf("verify: %s", out)
	}

	if _, errOut, code := e.as("carol", "", "journal", "verify", "--require-signatures"); code != exit.Usage || !strings.Contains(errOut, "needs --allowed-signers") {
		t.Fatalf("--require-signatures alone: %d %s", code, errOut)
	}

	// journal.allowed-signers in the context is verify's default.
	cfg, _ := os.ReadFile(e.env["STORMCTL_CONFIG"])
	os.WriteFile(e.env["STORMCTL_CONFIG"], append(cfg, "    journal: {allowed-signers: "+e.allowed+"}\n"...), 0o600)
	if out, _ := mustRun(exit.OK, "carol", "alice", "journal", "verify"); !strings.Contains(out, "3 of 3 entries signed by allowed signers") {
		t.Fatalf("verify with the context's allowed signers: %s", out)
	}

	// A checkpoint kept outside Redis, and an export (which ends with one).
	cpFile, export := filepath.Join(e.dir, "INC-7.checkpoint"), filepath.Join(e.dir, "INC-7.jsonl")
	mustRun(exit.OK, "alice", "alice", "journal", "checkpoint", "--out", cpFile)
	mustRun(exit.OK, "alice", "alice", "journal", "export", "--format", "jsonl", "--out", export)
	if out, _ := mustRun(exit.OK, "carol", "alice", append(strict, "--file", export)...); !strings.Contains(out, "checkpoint of") || !strings.Contains(out, "allowed signer alice) matched") {
		t.Fatalf("verify the export: %s", out)
	}
	if out, errOut, code := e.as("alice", "", "journal", "checkpoint", "--signing-key", "none"); code != exit.OK || !strings.Contains(out, `"unsigned":true`) || !strings.Contains(errOut, "unsigned checkpoint of 3 entries") {
		t.Fatalf("unsigned checkpoint: %d %s %s", code, out, errOut)
	}

	// Someone with XADD but no key appends an entry as alice, hash recomputed,
	// and moves the head: the chain holds, the signatures do not.
	head, _ := e.client.Get(ctx, e.keysNS.JournalHead()).Result()
	forged, stored, _ := journal.Entry{Event: journal.ActionReleased, Actor: "alice", Reason: "all clear", Step: journal.AdHoc}.Seal(head)
	e.client.XAdd(ctx, &redis.XAddArgs{Stream: e.keysNS.Journal(), Values: []string{"entry", string(stored)}})
	e.client.Set(ctx, e.keysNS.JournalHead(), forged.Hash, 0)
	if out, _ := mustRun(exit.OK, "carol", "", "journal", "verify", "--signing-key", "none", "--allow-unsigned"); !strings.Contains(out, "chain intact: 4 entries") {
		t.Fatalf("the chain alone: %s", out)
	}
	out, errOut := mustRun(exit.CheckFailed, "carol", "alice", strict...)
	if !strings.Contains(out, "FAILED") || !strings.Contains(errOut, "entry 4 "+forged.ID) || !strings.Contains(errOut, `unsigned entry by "alice"`) {
		t.Fatalf("forged XADD: %s\n%s", out, errOut)
	}
	// -o json: the report, failure included, on stdout.
	out, _ = mustRun(exit.CheckFailed, "carol", "alice", append(strict, "-o", "json")...)
	var rep journal.Verification
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Entries != 4 || rep.Verified != 3 || rep.Unsigned != 1 || len(rep.Proven) < 3 {
		t.Fatalf("verify -o json: %v %s", err, out)
	}

	// eve signs an entry claiming to be alice: her key is allowed, as eve.
	mustRun(exit.OK, "alice", "eve", "incident", "open", "not me")
	// Both entries are listed: the unsigned one by alice (who holds a key)
	// and eve's.
	out, errOut = mustRun(exit.CheckFailed, "carol", "alice", "journal", "verify", "--allowed-signers", e.allowed)
	if !strings.Contains(errOut, "entry 4") || !strings.Contains(errOut, "and 1 more signature problems") ||
		!strings.Contains(out, "entries whose signature proves nothing (2)") || !strings.Contains(out, "its actor holds an allowed key") ||
		!regexp.MustCompile(`entry 5 .*signed by the key of eve, not of alice`).MatchString(out) {
		t.Fatalf("eve as alice: %s\n%s", out, errOut)
	}

	// Cut the tail back to before the checkpoint and rewrite the head: only
	// the checkpoint can tell.
	msgs, _ := e.client.XRange(ctx, e.keysNS.Journal(), "-", "+").Result()
	for _, m := range msgs[2:] {
		e.client.XDel(ctx, e.keysNS.Journal(), m.ID)
	}
	last, _ := journal.Parse([]byte(msgs[1].Values["entry"].(string)))
	e.client.Set(ctx, e.keysNS.JournalHead(), last.Hash, 0)
	_, errOut = mustRun(exit.CheckFailed, "carol", "alice", strict...)
	if !strings.Contains(errOut, "local high-water mark") || !strings.Contains(errOut, "recorded 4 entries, the journal has 2") {
		t.Fatalf("cut tail against this machine's mark: %s", errOut)
	}
	strict = append(strict, "--no-local-mark")
	mustRun(exit.OK, "carol", "alice", strict...)
	for _, cp := range []string{cpFile, export} {
		_, errOut = mustRun(exit.CheckFailed, "carol", "alice", append(strict, "--checkpoint", cp)...)
		if !strings.Contains(errOut, "recorded 3 entries, the journal has 2: entries were cut from its end") {
			t.Fatalf("cut tail against %s: %s", cp, errOut)
		}
	}
	if _, errOut, code := e.as("carol", "alice", append(strict, "--checkpoint", e.allowed)...); code != exit.Usage || !strings.Contains(errOut, "no checkpoint in the file") {
		t.Fatalf("not a checkpoint: %d %s", code, errOut)
	}
	if _, errOut, code := e.as("carol", "", "status", "--signing-key", filepath.Join(e.dir, "missing")); code != exit.Usage || !strings.Contains(errOut, "journal signing key") {
		t.Fatalf("missing key: %d %s", code, errOut)
	}
}

// TestVerifyOneEntryWithSSHKeygen runs the shell block of
// docs/journal-signatures.md on an export: plain ssh-keygen accepts
// stormctl's signature, and refuses it once the entry is edited.
func TestVerifyOneEntryWithSSHKeygen(t *testing.T) {
	for _, tool := range []string{"bash", "jq", "sed", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	doc, err := os.ReadFile("../../docs/journal-signatures.md")
	if err != nil {
		t.Fatal(err)
	}
	block := func(name string) string {
		m := regexp.MustCompile("(?s)<!-- " + name + "[^>]*-->\n```sh\n(.*?)```").FindSubmatch(doc)
		if m == nil {
			t.Fatalf("the %s block is missing from docs/journal-signatures.md", name)
		}
		return string(m[1])
	}
	script, checkpoint := block("verify-one-entry"), block("verify-checkpoint")
	e := newSignedEnv(t)
	if _, errOut, code := e.as("alice", "alice", append([]string{"retries", "off", "checkout->payments"}, applyArgs...)...); code != 0 {
		t.Fatal(errOut)
	}
	e.as("bob", "bob", "incident", "open", "storm <b>\"quoted\"</b> ,\"hash\":\"x\"")
	export := filepath.Join(e.dir, "INC-7.jsonl")
	if _, errOut, code := e.as("alice", "alice", "journal", "export", "--format", "jsonl", "--out", export); code != 0 {
		t.Fatal(errOut)
	}
	run := func(script string) (string, error) {
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = e.dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(script)
	if err != nil || !strings.Contains(out, "hash matches") || !strings.Contains(out, `Good "stormctl-journal" signature for bob`) {
		t.Fatalf("documented verification of entry 2: %v\n%s", err, out)
	}
	out, err = run(checkpoint)
	if err != nil || !strings.Contains(out, `Good "stormctl-journal" signature for alice`) || !strings.Contains(out, "2 entries, head ") {
		t.Fatalf("documented verification of the export's checkpoint: %v\n%s", err, out)
	}
	data, _ := os.ReadFile(export)
	edited := strings.Replace(string(data), `storm \u003cb\u003e`, `calm \u003cb\u003e`, 1)
	if edited == string(data) {
		t.Fatalf("the title is not in the export as expected:\n%s", data)
	}
	os.WriteFile(export, []byte(edited), 0o600)
	if out, err := run(script); err == nil {
		t.Fatalf("an edited entry verified:\n%s", out)
	}
	os.WriteFile(export, []byte(strings.Replace(edited, `"count":2,`, `"count":1,`, 1)), 0o600)
	if out, err := run(checkpoint); err == nil {
		t.Fatalf("an edited checkpoint verified:\n%s", out)
	}
}
