package journal

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// sshKey is a key made by the real ssh-keygen.
type sshKey struct {
	path, pub string // private key file, public key line
	signer    Signer
}

func sshKeygen(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("ssh-keygen not installed (Debian: openssh-client)")
	}
	return p
}

// newKey makes an unencrypted key with ssh-keygen; typ is ed25519, rsa or
// ecdsa.
func newKey(t testing.TB, dir, name, typ string) sshKey {
	t.Helper()
	path := filepath.Join(dir, name)
	out, err := exec.Command(sshKeygen(t), "-q", "-t", typ, "-N", "", "-C", name, "-f", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadSigner(path, func(string) string { return "" })
	if err != nil || s == nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return sshKey{path: path, pub: strings.TrimSpace(string(pub)), signer: s}
}

// allowedFile writes lines as an allowed_signers file and parses it.
func allowedFile(t testing.TB, dir string, lines ...string) (string, *AllowedSigners) {
	t.Helper()
	path := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	a, err := ParseAllowedSigners(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return path, a
}

// keygenSign signs message with ssh-keygen -Y sign and returns the armored
// signature it wrote.
func keygenSign(t *testing.T, key, dir string, message []byte) string {
	t.Helper()
	msg := filepath.Join(dir, "message")
	if err := os.WriteFile(msg, message, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(msg + ".sig")
	if out, err := exec.Command(sshKeygen(t), "-Y", "sign", "-f", key, "-n", Namespace, msg).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
	}
	sig, err := os.ReadFile(msg + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	return string(sig)
}

// keygenVerify runs ssh-keygen -Y verify of sig over message as principal.
func keygenVerify(t *testing.T, allowed, dir, principal string, message []byte, sig string) (string, error) {
	t.Helper()
	sigPath := filepath.Join(dir, "entry.sig")
	if err := os.WriteFile(sigPath, []byte(sig), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sshKeygen(t), "-Y", "verify", "-f", allowed, "-I", principal, "-n", Namespace, "-s", sigPath)
	cmd.Stdin = bytes.NewReader(message)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestSignaturesInteropWithSSHKeygen(t *testing.T) {
	dir := t.TempDir()
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		t.Run(typ, func(t *testing.T) {
			alice := newKey(t, dir, "alice-"+typ, typ)
			allowed, signers := allowedFile(t, dir, "alice "+alice.pub)
			e := scriptedIncident()[2]
			e.Actor = "alice"
			sealed, stored, err := e.SealWith("", alice.signer)
			if err != nil {
				t.Fatal(err)
			}
			canon, _ := sealed.Canonical()
			if typ == "ed25519" {
				// Ed25519 is deterministic: the same bytes as ssh-keygen.
				if theirs := keygenSign(t, alice.path, dir, canon); theirs != sealed.Signature {
					t.Fatalf("stormctl's signature differs from ssh-keygen's:\n%s\n%s", sealed.Signature, theirs)
				}
			}
			// ssh-keygen accepts stormctl's signature of the entry...
			if out, err := keygenVerify(t, allowed, dir, "alice", canon, sealed.Signature); err != nil || !strings.Contains(out, `Good "stormctl-journal" signature for alice`) {
				t.Fatalf("ssh-keygen -Y verify: %v\n%s", err, out)
			}
			// ...but not for another principal, nor for other content.
			if out, err := keygenVerify(t, allowed, dir, "bob", canon, sealed.Signature); err == nil {
				t.Fatalf("ssh-keygen accepted alice's signature as bob's: %s", out)
			}
			if out, err := keygenVerify(t, allowed, dir, "alice", append(canon, ' '), sealed.Signature); err == nil {
				t.Fatalf("ssh-keygen accepted a signature of other bytes: %s", out)
			}
			// stormctl accepts ssh-keygen's signature of the canonical form.
			sealed.Signature = keygenSign(t, alice.path, dir, canon)
			line := storedForm(t, sealed)
			rep, err := Check(records([][]byte{line}), VerifyOptions{AllowedSigners: signers, RequireSignatures: true})
			if err != nil || rep.Verified != 1 {
				t.Fatalf("ssh-keygen's signature: %v %+v", err, rep)
			}
			if !bytes.Equal(stored, storedForm(t, sealed)) && typ == "ed25519" {
				t.Fatalf("stored forms differ")
			}
			// A checkpoint signed by hand with ssh-keygen is accepted too.
			cp, _ := NewCheckpoint(sealed.Hash, 1, t0, "alice", nil)
			cp.Signature = keygenSign(t, alice.path, dir, cp.Canonical())
			rep, err = Check(records([][]byte{line}), VerifyOptions{AllowedSigners: signers, RequireSignatures: true,
				Checkpoints: []SourcedCheckpoint{{Source: "by hand", Checkpoint: cp}}})
			if err != nil || rep.Checkpoints[0].Signature != SigValid {
				t.Fatalf("ssh-keygen's checkpoint signature: %v %+v", err, rep.Checkpoints)
			}
		})
	}
}

// storedForm is the stored form of an already sealed entry.
func storedForm(t testing.TB, e Entry) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startAgent runs a real ssh-agent in the foreground on a socket in dir,
// loaded with keys; it is stopped when the test ends.
func startAgent(t testing.TB, dir string, keys ...string) string {
	sock, _ := startStoppableAgent(t, dir, keys...)
	return sock
}

// startStoppableAgent is startAgent, also returning a func that stops the
// agent early.
func startStoppableAgent(t testing.TB, dir string, keys ...string) (string, func()) {
	t.Helper()
	agentBin, err := exec.LookPath("ssh-agent")
	if err != nil {
		t.Skip("ssh-agent not installed")
	}
	sock := filepath.Join(dir, "agent.sock")
	cmd := exec.Command(agentBin, "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(stop)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ssh-agent did not create its socket")
		}
	}
	for _, k := range keys {
		add := exec.Command("ssh-add", k)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add: %v\n%s", err, out)
		}
	}
	return sock, stop
}

func TestSignWithSSHAgent(t *testing.T) {
	dir := t.TempDir()
	alice := newKey(t, dir, "alice", "ed25519")
	bob := newKey(t, dir, "bob", "rsa")
	// An encrypted key signs through the agent, found by its .pub.
	locked := filepath.Join(dir, "locked")
	if out, err := exec.Command(sshKeygen(t), "-q", "-t", "ed25519", "-N", "secret", "-C", "locked", "-f", locked).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if _, err := LoadSigner(locked, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "SSH_AUTH_SOCK is not set") {
		t.Fatalf("encrypted key without an agent: %v", err)
	}
	sock := startAgent(t, dir, alice.path, bob.path)
	env := func(k string) string { return map[string]string{"SSH_AUTH_SOCK": sock}[k] }
	if _, err := LoadSigner(locked, env); err == nil || !strings.Contains(err.Error(), "is not in the ssh-agent") {
		t.Fatalf("encrypted key not in the agent: %v", err)
	}
	allowed, _ := allowedFile(t, dir, "alice "+alice.pub, "bob "+bob.pub)
	for _, tc := range []struct{ key, principal string }{{bob.path + ".pub", "bob"}, {"", "alice"}} {
		s, err := LoadSigner(tc.key, env)
		if err != nil || s == nil {
			t.Fatalf("agent signer %q: %v", tc.key, err)
		}
		msg := []byte(`{"id":"E1"}`)
		sig, err := s.Sign(msg)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := keygenVerify(t, allowed, dir, tc.principal, msg, sig); err != nil {
			t.Fatalf("ssh-keygen rejects the agent's signature as %s: %v %s", tc.principal, err, out)
		}
	}
	if s, err := LoadSigner(SigningKeyNone, env); s != nil || err != nil {
		t.Fatalf("none: %v %v", s, err)
	}
}

// TestAgentGoneSaysHowToActUnsigned: an agent that dies mid-incident fails
// the write with a way out, rather than writing unsigned behind the
// responder's back.
func TestAgentGoneSaysHowToActUnsigned(t *testing.T) {
	dir := t.TempDir()
	alice := newKey(t, dir, "alice", "ed25519")
	sock, stop := startStoppableAgent(t, dir, alice.path)
	s, err := LoadSigner(alice.path+".pub", func(k string) string { return map[string]string{"SSH_AUTH_SOCK": sock}[k] })
	if err != nil {
		t.Fatal(err)
	}
	stop()
	_, _, err = scriptedIncident()[0].SealWith("", s)
	if err == nil || !strings.Contains(err.Error(), "--signing-key none") {
		t.Fatalf("signing with a dead agent: %v", err)
	}
}

// FuzzVerifySignature feeds arbitrary signature text, as Redis or an
// export could hold, to the verifier: it must refuse, never panic, and
// accept only a signature of the message itself.
func FuzzVerifySignature(f *testing.F) {
	dir := f.TempDir()
	k := newKey(f, dir, "alice", "ed25519")
	msg := []byte(`{"id":"E1"}`)
	good, err := k.signer.Sign(msg)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, false)
	f.Add(strings.Replace(good, "A", "B", 1), false)
	f.Add("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n", false)
	f.Add(good[:len(good)/2], true)
	f.Fuzz(func(t *testing.T, sig string, other bool) {
		m := msg
		if other {
			m = []byte(`{"id":"E2"}`)
		}
		if _, err := verifySignature(m, sig); err == nil && other {
			t.Fatalf("accepted a signature of other content: %q", sig)
		}
	})
}

func FuzzParseCheckpoint(f *testing.F) {
	cp, _ := NewCheckpoint(strings.Repeat("ab", 32), 3, t0, "alice", nil)
	f.Add(cp.JSON())
	f.Add([]byte(`{"checkpoint":1,"head":"","count":0,"time":"2024-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"checkpoint":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCheckpoint(data)
		if err != nil {
			return
		}
		again, err := ParseCheckpoint(c.JSON())
		if err != nil || again.Head != c.Head || again.Count != c.Count || !again.Time.Equal(c.Time) {
			t.Fatalf("accepted %q but its own form %q does not parse back: %v", data, c.JSON(), err)
		}
	})
}
