package main

import (
	"context"
	stdhtml "html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

// signedReport exports the HTML report of the signed environment's journal
// as actor, signing with key's file, and returns it.
func (e *signedEnv) signedReport(actor, key string, extra ...string) string {
	e.t.Helper()
	out := filepath.Join(e.dir, "report.html")
	os.Remove(out)
	args := append([]string{"journal", "export", "--format", "html", "--no-charts", "--out", out}, extra...)
	if _, errOut, code := e.as(actor, key, args...); code != exit.OK {
		e.t.Fatalf("export html: exit %d\n%s", code, errOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(data)
}

// signerCells counts the timeline's signer cells by their text.
func signerCells(html string) map[string]int {
	n := map[string]int{}
	for _, part := range strings.Split(html, `<br><span class="sig `)[1:] {
		_, text, _ := strings.Cut(part, `">`)
		text, _, _ = strings.Cut(text, "</span>")
		n[stdhtml.UnescapeString(text)]++
	}
	return n
}

// TestJournalExportHTMLSigned: the report's proof is journal verify's,
// against real ssh-keygen keys on a real redis-server, and each row names
// its signer; a forged entry fails the proof; the closing checkpoint is
// signed and journal verify reads it back from the report.
func TestJournalExportHTMLSigned(t *testing.T) {
	ctx := context.Background()
	e := newSignedEnv(t)
	for _, step := range []struct {
		actor string
		args  []string
	}{
		{"alice", append([]string{"retries", "off", "checkout->payments"}, applyArgs...)},
		{"bob", append([]string{"retries", "cap", "2", "checkout->payments", "--supersede"}, applyArgs...)},
		{"bob", []string{"incident", "open", "checkout retry storm"}},
	} {
		if _, errOut, code := e.as(step.actor, step.actor, step.args...); code != exit.OK {
			t.Fatalf("%v: exit %d %s", step.args, code, errOut)
		}
	}

	for _, args := range [][]string{{"--format", "md", "--allowed-signers", e.allowed}, {"--format", "html", "--require-signatures", "--no-charts"}} {
		if _, errOut, code := e.as("carol", "", append([]string{"journal", "export"}, args...)...); code != exit.Usage || !strings.Contains(errOut, "--allowed-signers") {
			t.Errorf("%v: exit %d, want a usage error naming --allowed-signers: %s", args, code, errOut)
		}
	}

	// Signed, keys not checked: the rows name the key, the proof says it is unproven.
	html := e.signedReport("carol", "alice")
	if !strings.Contains(html, "not checked against allowed signers (give --allowed-signers)") || signerCells(html)["signed by key "+fingerprint(t, e.keys["alice"])+", not checked against allowed signers"] != 1 {
		t.Errorf("signed without allowed signers: %v", signerCells(html))
	}

	html = e.signedReport("alice", "alice", "--allowed-signers", e.allowed)
	report := filepath.Join(e.dir, "report.html")
	for _, want := range []string{
		`<tr><td>journal verify</td><td><span class="ok">verified</span></td><td>3 entries checked</td></tr>`,
		`<tr><td>signatures</td><td><span class="ok">verified</span></td><td>3 of 3 entries signed by allowed signers whose principal is the entry&#39;s actor (alice 1, bob 2)</td></tr>`,
		`<tr><td>closing checkpoint</td><td><span class="ok">signed</span></td>`,
		"stormctl journal verify --allowed-signers " + e.allowed + " --checkpoint " + report + "\n",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("signed report lacks %q", want)
		}
	}
	if fp := fingerprint(t, e.keys["alice"]); !strings.Contains(stdhtml.UnescapeString(html), "signed by alice with "+fp) {
		t.Errorf("closing checkpoint: not signed by alice with %s", fp)
	}
	if got := signerCells(html); got["signed by alice"] != 1 || got["signed by bob"] != 2 || len(got) != 2 {
		t.Errorf("signer per row: %v", got)
	}
	// The re-verify command the report names passes, reading the
	// checkpoint from the report itself.
	out, errOut, code := e.as("carol", "", "journal", "verify", "--allowed-signers", e.allowed, "--checkpoint", report)
	if code != exit.OK || !strings.Contains(out, "signed by an allowed signer alice) matched") {
		t.Fatalf("verify --checkpoint REPORT.html: exit %d\nout: %q\nerr: %q", code, out, errOut)
	}

	// The context's journal.allowed-signers is the default, as for verify.
	cfg, _ := os.ReadFile(e.env["STORMCTL_CONFIG"])
	os.WriteFile(e.env["STORMCTL_CONFIG"], append(cfg, "    journal: {allowed-signers: "+e.allowed+"}\n"...), 0o600)
	if html := e.signedReport("carol", "alice"); !strings.Contains(html, "3 of 3 entries signed by allowed signers") {
		t.Error("the context's allowed signers were not used")
	}

	// Someone with XADD but no key appends an entry as alice, hash
	// recomputed, head moved: the chain holds, the row says unsigned, and
	// with --require-signatures the proof fails.
	head, _ := e.client.Get(ctx, e.keysNS.JournalHead()).Result()
	forged, stored, _ := journal.Entry{Event: journal.ActionReleased, Actor: "alice", Reason: "all clear", Step: journal.AdHoc}.Seal(head)
	e.client.XAdd(ctx, &redis.XAddArgs{Stream: e.keysNS.Journal(), Values: []string{"entry", string(stored)}})
	e.client.Set(ctx, e.keysNS.JournalHead(), forged.Hash, 0)
	html = e.signedReport("carol", "alice")
	if got := signerCells(html); got["unsigned"] != 1 || !strings.Contains(html, "3 of 4 entries signed by allowed signers") ||
		!strings.Contains(html, `<tr><td>signatures</td><td><span class="muted">not proven</span>`) {
		t.Errorf("forged unsigned entry: %v", got)
	}
	html = e.signedReport("carol", "alice", "--require-signatures")
	if !strings.Contains(html, `<tr><td>journal verify</td><td><span class="bad">FAILED</span>`) ||
		!strings.Contains(html, `<tr><td>signatures</td><td><span class="bad">FAILED</span>`) || signerCells(html)["unsigned, signatures required"] != 1 ||
		!strings.Contains(html, "--require-signatures --checkpoint") {
		t.Errorf("forged entry under --require-signatures: %v", signerCells(html))
	}

	// eve signs an entry claiming to be alice: her key is allowed, as eve.
	if _, errOut, code := e.as("alice", "eve", "incident", "open", "not me"); code != exit.OK {
		t.Fatal(errOut)
	}
	html = e.signedReport("carol", "alice")
	if !strings.Contains(html, `<tr><td>journal verify</td><td><span class="bad">FAILED</span>`) ||
		signerCells(html)["wrong signer: signed by the key of eve, not of alice"] != 1 {
		t.Errorf("eve as alice: %v", signerCells(html))
	}
}

// fingerprint is the SHA256 fingerprint of the public key beside the
// private key file, as ssh-keygen -l prints it.
func fingerprint(t *testing.T, keyPath string) string {
	t.Helper()
	out, err := exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", keyPath+".pub").Output()
	f := strings.Fields(string(out))
	if err != nil || len(f) < 2 {
		t.Fatalf("ssh-keygen -l: %v %s", err, out)
	}
	return f[1]
}
