package journal

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// TestAllowedSignersAgreesWithSSHKeygen runs each allowed_signers line
// through the real ssh-keygen -Y verify and through Allows: both must
// accept or refuse the same signature for the same principal.
func TestAllowedSignersAgreesWithSSHKeygen(t *testing.T) {
	dir := t.TempDir()
	alice := newKey(t, dir, "alice", "ed25519")
	other := newKey(t, dir, "other", "ed25519")
	message := []byte(`{"id":"E1","actor":"alice"}`)
	sig, err := alice.signer.Sign(message)
	if err != nil {
		t.Fatal(err)
	}
	key, err := verifySignature(message, sig)
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-48 * time.Hour).UTC().Format("20060102")
	future := time.Now().Add(48 * time.Hour).UTC().Format("20060102")
	cases := []struct {
		line, principal string
	}{
		{"alice " + alice.pub, "alice"},
		{"alice " + alice.pub, "bob"},
		{"alice@example.com,alice " + alice.pub, "alice"},
		{"*@example.com " + alice.pub, "alice@example.com"},
		{"*@example.com " + alice.pub, "alice"},
		{"a?ice " + alice.pub, "alice"},
		{"!alice,* " + alice.pub, "alice"},
		{"!bob,* " + alice.pub, "alice"},
		{`"alice" ` + alice.pub, "alice"},
		{`namespaces="stormctl-journal" ` + alice.pub, "namespaces=\"stormctl-journal\""},
		{`alice namespaces="git" ` + alice.pub, "alice"},
		{`alice namespaces="git,stormctl-*" ` + alice.pub, "alice"},
		{`alice NAMESPACES="stormctl-journal" ` + alice.pub, "alice"},
		{`alice valid-before="` + past + `Z" ` + alice.pub, "alice"},
		{`alice valid-after="` + future + `Z" ` + alice.pub, "alice"},
		{`alice valid-after="` + past + `",valid-before="` + future + `" ` + alice.pub, "alice"},
		{"alice " + other.pub, "alice"},
		{"alice " + other.pub + "\nalice " + alice.pub, "alice"},
		{"# alice " + alice.pub + "\n\n  bob " + alice.pub, "bob"},
	}
	accepted := 0
	for _, tc := range cases {
		path, allowed := allowedFile(t, dir, tc.line)
		out, kerr := keygenVerify(t, path, dir, tc.principal, message, sig)
		ok, why := allowed.Allows(key, tc.principal, time.Now())
		if ok != (kerr == nil) {
			t.Errorf("%q as %q: stormctl says %v (%s), ssh-keygen says %v: %s", tc.line, tc.principal, ok, why, kerr == nil, out)
		}
		if ok {
			accepted++
		}
	}
	if accepted < 5 || accepted > len(cases)-5 {
		t.Fatalf("%d of %d cases accepted: the table no longer tells accepting from refusing", accepted, len(cases))
	}
}

// TestCertificateSignersAgreeWithSSHKeygen signs with a user certificate
// issued by ssh-keygen -s: a cert-authority line accepts it for the
// certificate's principals only, for stormctl as for ssh-keygen.
func TestCertificateSignersAgreeWithSSHKeygen(t *testing.T) {
	dir := t.TempDir()
	ca := newKey(t, dir, "ca", "ed25519")
	user := newKey(t, dir, "carol", "ed25519")
	if out, err := exec.Command(sshKeygen(t), "-q", "-s", ca.path, "-I", "carol-id", "-n", "carol,oncall", "-V", "-1d:+1d", user.path+".pub").CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -s: %v %s", err, out)
	}
	signer, err := LoadSigner(user.path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	message := []byte(`{"id":"E1","actor":"carol"}`)
	sig, err := signer.Sign(message)
	if err != nil {
		t.Fatal(err)
	}
	key, err := verifySignature(message, sig)
	if _, isCert := key.(*ssh.Certificate); err != nil || !isCert {
		t.Fatalf("not signed with the certificate: %v %T", err, key)
	}
	for _, tc := range []struct {
		line, principal string
		want            bool
	}{
		{"*@example.com,carol,oncall,mallory cert-authority " + ca.pub, "carol", true},
		{"*@example.com,carol,oncall,mallory cert-authority " + ca.pub, "oncall", true},
		{"*@example.com,carol,oncall,mallory cert-authority " + ca.pub, "mallory", false}, // not in the certificate
		{"carol " + ca.pub, "carol", false},                                               // the CA key itself did not sign
		{"carol cert-authority " + user.pub, "carol", false},                              // not the certificate's CA
	} {
		path, allowed := allowedFile(t, dir, tc.line)
		out, kerr := keygenVerify(t, path, dir, tc.principal, message, sig)
		ok, why := allowed.Allows(key, tc.principal, time.Now())
		if ok != tc.want || (kerr == nil) != tc.want {
			t.Errorf("%q as %q: want %v; stormctl says %v (%s), ssh-keygen says %v: %s", tc.line, tc.principal, tc.want, ok, why, kerr == nil, out)
		}
	}
}

func TestAllowedSignersErrorsNamePosition(t *testing.T) {
	pub := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHIiIm4BSn9ih8VRjVfzVhXRX2UldEOtMEWDbbxr3MRn"
	for line, want := range map[string]string{
		"alice":                                          "signers:1:6: missing key after the principals",
		`"alice ` + pub:                                  "signers:1:1: principals: missing end quote",
		"alice bogus=1 " + pub:                           "signers:1:7: bad options: unsupported option",
		`alice namespaces=git ` + pub:                    "signers:1:18: bad options: missing start quote",
		`alice namespaces="git ` + pub:                   "options: missing end quote",
		`alice valid-after="2024" ` + pub:                "signers:1:19: bad options: valid-after: invalid time",
		`alice cert-authority, ` + pub:                   "bad options: unexpected end-of-options",
		`alice cert-authorityX ` + pub:                   "signers:1:21: bad options: unknown key option",
		"alice ssh-ed25519 AAAA!":                        "signers:1:7: invalid key",
		"alice ssh-rsa " + pub[12:]:                      `key type "ssh-rsa" does not match`,
		"alice " + pub[:40]:                              "signers:1:7: invalid key",
		"alice sk-ssh-ed25519-cert-v01@openssh.com AAAA": "signers:1:7: invalid key",
		`alice valid-after="20250101",valid-before="20240101" ` + pub: `"valid-before" time is before "valid-after"`,
		`alice namespaces="a",namespaces="b" ` + pub:                  `multiple "namespaces" clauses`,
	} {
		_, err := ParseAllowedSigners(strings.NewReader("# comment\n"[:0]+line+"\n"), "signers")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", line, err, want)
		}
	}
	long := "# x\nalice " + pub + " " + strings.Repeat("c", maxAllowedLine) + "\n"
	if _, err := ParseAllowedSigners(strings.NewReader(long), "signers"); err == nil || !strings.HasPrefix(err.Error(), "signers:2:1: line longer than") {
		t.Errorf("long line: %v", err)
	}
	a, err := ParseAllowedSigners(strings.NewReader("# team\n\n  alice,bob@x "+pub+" laptop\n"), "signers")
	if err != nil || len(a.Signers) != 1 || a.Signers[0].Line != 3 || a.Signers[0].Principals != "alice,bob@x" {
		t.Fatalf("%v %+v", err, a)
	}
}

func TestMatchPattern(t *testing.T) {
	for _, tc := range []struct {
		s, p string
		want bool
	}{
		{"alice", "alice", true}, {"alice", "al*", true}, {"alice", "*e", true}, {"alice", "a?ice", true},
		{"alice", "*", true}, {"", "*", true}, {"alice", "bob", false}, {"alice", "a*x", false},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "*a*a*a*a*a*a*a*a*a*a*c", false}, {"a.b@c", "*@c", true},
	} {
		if got := matchPattern(tc.s, tc.p); got != tc.want {
			t.Errorf("matchPattern(%q, %q) = %v", tc.s, tc.p, got)
		}
	}
	if matchList("alice", "!alice,*") != -1 || matchList("bob", "!alice,*") != 1 || matchList("bob", "alice") != 0 {
		t.Fatal("matchList")
	}
}

var positioned = regexp.MustCompile(`^signers:\d+:\d+: `)

func FuzzParseAllowedSigners(f *testing.F) {
	pub := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHIiIm4BSn9ih8VRjVfzVhXRX2UldEOtMEWDbbxr3MRn"
	for _, s := range []string{
		"alice " + pub, `"al ice",bob namespaces="stormctl-journal",valid-after="20240101Z" ` + pub + " c",
		"*@x cert-authority " + pub, `a namespaces="\"x\"" ` + pub, "# c\n\n", `a valid-before="202401011200" ` + pub,
		"a \"", "a b=\"", `a namespaces="x",`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		a, err := ParseAllowedSigners(strings.NewReader(data), "signers")
		if err != nil {
			if !positioned.MatchString(err.Error()) {
				t.Fatalf("error without file:line:col: %v", err)
			}
			return
		}
		for _, s := range a.Signers {
			if s.Key == nil || s.Principals == "" || s.Line < 1 {
				t.Fatalf("accepted a line without key or principals: %+v", s)
			}
			a.Allows(s.Key, s.Principals, time.Now())
		}
	})
}
