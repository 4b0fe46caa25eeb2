package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// Namespace is the SSHSIG namespace of every journal signature, entries
// and checkpoints alike: `ssh-keygen -Y verify -n stormctl-journal`.
const Namespace = "stormctl-journal"

// Signer signs journal entries and checkpoints with an SSH key.
type Signer interface {
	// PublicKey is the key that verifies the signatures.
	PublicKey() ssh.PublicKey
	// Sign returns the armored SSHSIG signature of message (namespace
	// stormctl-journal, SHA-512), byte for byte what
	// `ssh-keygen -Y sign -n stormctl-journal` writes for the same key.
	Sign(message []byte) (string, error)
}

// sshSigner signs with an ssh.Signer: a private key file or an agent key.
type sshSigner struct {
	key  ssh.Signer
	desc string // where the key came from, for errors
}

// NewSigner signs with key.
func NewSigner(key ssh.Signer, desc string) Signer { return &sshSigner{key: key, desc: desc} }

func (s *sshSigner) PublicKey() ssh.PublicKey { return s.key.PublicKey() }

func (s *sshSigner) Sign(message []byte) (string, error) {
	sig, err := sshsig.Sign(bytes.NewReader(message), s.key, sshsig.HashSHA512, Namespace)
	if err != nil {
		return "", fmt.Errorf("sign journal entry with %s: %w (nothing was written; to act unsigned, on the record as unsigned: --signing-key none)", s.desc, err)
	}
	return armor(sig.Marshal()), nil
}

// armor writes the signature as ssh-keygen does: base64 in lines of 70
// between the BEGIN and END markers, ending with a newline. (encoding/pem
// wraps at 64, which ssh-keygen accepts but never writes.)
func armor(blob []byte) string {
	b64 := base64.StdEncoding.EncodeToString(blob)
	var sb strings.Builder
	sb.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(b64) > 70 {
		sb.WriteString(b64[:70] + "\n")
		b64 = b64[70:]
	}
	sb.WriteString(b64 + "\n-----END SSH SIGNATURE-----\n")
	return sb.String()
}

// parseSignature reads an armored signature and checks its namespace.
func parseSignature(armored string) (*sshsig.Signature, error) {
	sig, err := sshsig.Unarmor([]byte(armored))
	if err != nil {
		return nil, fmt.Errorf("not an SSH signature: %w", err)
	}
	if sig.Namespace != Namespace {
		return nil, fmt.Errorf("signature is for namespace %q, not %q", sig.Namespace, Namespace)
	}
	return sig, nil
}

// verifySignature checks that armored is a valid signature of message by
// the key it names, and returns that key.
func verifySignature(message []byte, armored string) (ssh.PublicKey, error) {
	sig, err := parseSignature(armored)
	if err != nil {
		return nil, err
	}
	if err := sshsig.Verify(bytes.NewReader(message), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		return sig.PublicKey, fmt.Errorf("signature by %s does not match the signed content: %w", ssh.FingerprintSHA256(sig.PublicKey), err)
	}
	return sig.PublicKey, nil
}

// SealWith is Seal, then signs the entry with signer (nil: unsigned). The
// signed message is the entry's canonical form — exactly the bytes whose
// SHA-256 is its Hash, so the signature covers PrevHash and thereby the
// entry's place in the chain. The signature is stored in Signature, after
// Hash; neither is part of the canonical form.
func (e Entry) SealWith(prev string, signer Signer) (Entry, []byte, error) {
	sealed, stored, err := e.Seal(prev)
	if err != nil || signer == nil {
		return sealed, stored, err
	}
	canon, err := sealed.Canonical()
	if err != nil {
		return Entry{}, nil, err
	}
	if sealed.Signature, err = signer.Sign(canon); err != nil {
		return Entry{}, nil, err
	}
	stored, err = json.Marshal(sealed)
	return sealed, stored, err
}

// hashOf is hex(SHA-256(b)).
func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// SigningKeyNone as the signing key disables signing.
const SigningKeyNone = "none"

// LoadSigner finds the signing key. keyPath is the configured key
// (journal.signing-key or --signing-key): an unencrypted private key file
// signs directly; a public key file (or a private key with a .pub beside it)
// names the ssh-agent key to sign with; "none" disables signing. With no
// keyPath the first key of the ssh-agent at $SSH_AUTH_SOCK signs, if there
// is one. It returns a nil Signer, and no error, when nothing is configured
// and no agent key is available: entries are then unsigned.
func LoadSigner(keyPath string, getenv func(string) string) (Signer, error) {
	sock := getenv("SSH_AUTH_SOCK")
	switch keyPath {
	case SigningKeyNone:
		return nil, nil
	case "":
		if sock == "" {
			return nil, nil
		}
		keys, err := agentSigners(sock)
		if err != nil || len(keys) == 0 {
			return nil, nil // an agent without keys is not a configured key
		}
		return NewSigner(keys[0], "ssh-agent key "+ssh.FingerprintSHA256(keys[0].PublicKey())), nil
	}
	data, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("journal signing key: %w", err)
	}
	if pub, _, _, _, err := ssh.ParseAuthorizedKey(data); err == nil {
		return agentSigner(sock, pub, keyPath)
	}
	key, err := ssh.ParsePrivateKey(data)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if pubData, perr := os.ReadFile(keyPath + ".pub"); perr == nil {
			if pub, _, _, _, perr := ssh.ParseAuthorizedKey(pubData); perr == nil {
				return agentSigner(sock, pub, keyPath)
			}
		}
		return nil, fmt.Errorf("journal signing key %s is encrypted: load it into ssh-agent (ssh-add) and give its .pub file as the signing key", keyPath)
	}
	if err != nil {
		return nil, fmt.Errorf("journal signing key %s: not an OpenSSH public or private key: %w", keyPath, err)
	}
	return certified(key, keyPath)
}

// certified signs with the user certificate beside the key (KEY-cert.pub),
// as ssh does, so that an allowed_signers cert-authority line can vouch
// for it; without one, with the plain key.
func certified(key ssh.Signer, keyPath string) (Signer, error) {
	data, err := os.ReadFile(keyPath + "-cert.pub")
	if errors.Is(err, os.ErrNotExist) {
		return NewSigner(key, keyPath), nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal signing key certificate: %w", err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	cert, ok := pub.(*ssh.Certificate)
	if err != nil || !ok {
		return nil, fmt.Errorf("journal signing key certificate %s-cert.pub: not an SSH certificate", keyPath)
	}
	cs, err := ssh.NewCertSigner(cert, key)
	if err != nil {
		return nil, fmt.Errorf("journal signing key certificate %s-cert.pub: %w", keyPath, err)
	}
	return NewSigner(cs, keyPath+"-cert.pub"), nil
}

// agentSigner is the agent's key matching pub.
func agentSigner(sock string, pub ssh.PublicKey, keyPath string) (Signer, error) {
	fp := ssh.FingerprintSHA256(pub)
	if sock == "" {
		return nil, fmt.Errorf("journal signing key %s (%s) is a public key, to be used through ssh-agent, but SSH_AUTH_SOCK is not set", keyPath, fp)
	}
	keys, err := agentSigners(sock)
	if err != nil {
		return nil, fmt.Errorf("journal signing key %s: %w", keyPath, err)
	}
	for _, k := range keys {
		if bytes.Equal(k.PublicKey().Marshal(), pub.Marshal()) {
			return NewSigner(k, "ssh-agent key "+fp), nil
		}
	}
	return nil, fmt.Errorf("journal signing key %s (%s) is not in the ssh-agent at %s (ssh-add it)", keyPath, fp, sock)
}

// agentSigners lists the agent's keys. The connection stays open for the
// run: each signature is one request on it.
func agentSigners(sock string) ([]ssh.Signer, error) {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("ssh-agent at %s: %w", sock, err)
	}
	keys, err := agent.NewClient(conn).Signers()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh-agent at %s: list keys: %w", sock, err)
	}
	return keys, nil
}
