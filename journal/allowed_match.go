package journal

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Allows reports whether signer's key may sign as principal in the journal
// namespace at time at: the principal matches a line of that key (or of the
// CA of its certificate, which must name the principal and be valid then)
// whose options allow it. When it may not, reason says why, naming the
// principals the key is allowed for if any.
func (a *AllowedSigners) Allows(key ssh.PublicKey, principal string, at time.Time) (ok bool, reason string) {
	var keyOf []string
	why := ""
	for _, s := range a.Signers {
		if !s.holds(key) {
			continue
		}
		keyOf = append(keyOf, s.Principals)
		if matchList(principal, s.Principals) != 1 {
			continue
		}
		if err := s.valid(key, principal, at); err != nil {
			why = fmt.Sprintf("%s:%d: %s", a.Path, s.Line, err)
			continue
		}
		return true, ""
	}
	switch {
	case why != "":
		return false, why
	case len(keyOf) > 0:
		return false, fmt.Sprintf("signed by the key of %s, not of %s", strings.Join(keyOf, "; "), principal)
	}
	return false, fmt.Sprintf("signed by %s, a key not in %s", ssh.FingerprintSHA256(key), a.Path)
}

// KeyFor reports whether principal holds a key that may sign journal
// entries at at (a key line naming it, or a CA whose principals match it),
// and where: "path:line". An unsigned entry by such an actor is suspect.
func (a *AllowedSigners) KeyFor(principal string, at time.Time) (where string, ok bool) {
	for _, s := range a.Signers {
		if matchList(principal, s.Principals) != 1 {
			continue
		}
		if s.Namespaces != "" && matchList(Namespace, s.Namespaces) != 1 {
			continue
		}
		if (!s.ValidAfter.IsZero() && at.Before(s.ValidAfter)) || (!s.ValidBefore.IsZero() && at.After(s.ValidBefore)) {
			continue
		}
		return fmt.Sprintf("%s:%d", a.Path, s.Line), true
	}
	return "", false
}

// holds reports whether the line's key is key, or for a cert-authority
// line, signed key's certificate.
func (s AllowedSigner) holds(key ssh.PublicKey) bool {
	if !s.CertAuthority {
		_, isCert := key.(*ssh.Certificate)
		return !isCert && bytes.Equal(key.Marshal(), s.Key.Marshal())
	}
	cert, ok := key.(*ssh.Certificate)
	return ok && bytes.Equal(cert.SignatureKey.Marshal(), s.Key.Marshal())
}

// valid checks the line's namespaces and validity at at, and a certificate.
func (s AllowedSigner) valid(key ssh.PublicKey, principal string, at time.Time) error {
	if s.Namespaces != "" && matchList(Namespace, s.Namespaces) != 1 {
		return fmt.Errorf("namespace %s not allowed (namespaces=%q)", Namespace, s.Namespaces)
	}
	if !s.ValidAfter.IsZero() && at.Before(s.ValidAfter) {
		return fmt.Errorf("key not yet valid at %s (valid-after %s)", at.UTC().Format(time.RFC3339), s.ValidAfter.UTC().Format(time.RFC3339))
	}
	if !s.ValidBefore.IsZero() && at.After(s.ValidBefore) {
		return fmt.Errorf("key expired at %s (valid-before %s)", at.UTC().Format(time.RFC3339), s.ValidBefore.UTC().Format(time.RFC3339))
	}
	if cert, ok := key.(*ssh.Certificate); ok {
		if cert.CertType != ssh.UserCert {
			return fmt.Errorf("certificate %q is not a user certificate", cert.KeyId)
		}
		cc := &ssh.CertChecker{Clock: func() time.Time { return at }}
		if err := cc.CheckCert(principal, cert); err != nil {
			return fmt.Errorf("certificate %q: %w", cert.KeyId, err)
		}
	}
	return nil
}

// matchList is OpenSSH's match_pattern_list: 1 if s matches a pattern of
// the comma-separated list, -1 if it matches a negated one (!pattern), 0 if
// neither.
func matchList(s, list string) int {
	got := 0
	for _, p := range strings.Split(list, ",") {
		neg := strings.HasPrefix(p, "!")
		if neg {
			p = p[1:]
		}
		if matchPattern(s, p) {
			if neg {
				return -1
			}
			got = 1
		}
	}
	return got
}

// matchPattern matches s against a pattern of * (any run) and ? (any one
// byte), in linear space and without backtracking blow-up.
func matchPattern(s, p string) bool {
	si, pi, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			si, pi = si+1, pi+1
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			mark++
			si, pi = mark, star+1
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
