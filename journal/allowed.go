package journal

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// AllowedSigners is a parsed allowed_signers file, the format of
// ssh-keygen(1) "ALLOWED SIGNERS" that git's gpg.ssh.allowedSignersFile
// uses: one key per line, after the principals allowed to sign with it.
//
//	alice@example.com,alice ssh-ed25519 AAAA… laptop
//	bob namespaces="stormctl-journal,git",valid-before="20270101Z" ssh-ed25519 AAAA…
//	*@example.com cert-authority ssh-ed25519 AAAA… the company CA
type AllowedSigners struct {
	Path    string
	Signers []AllowedSigner
}

// AllowedSigner is one line of an allowed_signers file.
type AllowedSigner struct {
	Line int
	// Principals is an OpenSSH pattern-list: comma-separated patterns with
	// * and ?, a leading ! negating one.
	Principals string
	// CertAuthority: Key is a CA, and signatures are made by user
	// certificates it signed, naming the principal.
	CertAuthority bool
	// Namespaces is a pattern-list of the namespaces the key may sign in;
	// "" allows all.
	Namespaces string
	// ValidAfter and ValidBefore bound when the key may have signed (zero:
	// unbounded); the journal checks them at each entry's time.
	ValidAfter, ValidBefore time.Time
	Key                     ssh.PublicKey
}

// maxAllowedLine bounds one line of an allowed_signers file.
const maxAllowedLine = 64 << 10

// ParseAllowedSigners reads an allowed_signers file, as ssh-keygen does:
// blank lines and lines starting with # are skipped; anything else that is
// not principals, options and a key is an error naming path:line:col.
func ParseAllowedSigners(r io.Reader, path string) (*AllowedSigners, error) {
	a := &AllowedSigners{Path: path}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxAllowedLine)
	n := 0
	for sc.Scan() {
		n++
		s, col, err := parseAllowedLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("%s:%d:%d: %s", path, n, col, err)
		}
		if s != nil {
			s.Line = n
			a.Signers = append(a.Signers, *s)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d:1: line longer than %d bytes", path, n+1, maxAllowedLine)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

const blanks = " \t\r\n"

// parseAllowedLine parses one line; nil for a blank or comment line. col
// is the 1-based column of the error.
func parseAllowedLine(line string) (*AllowedSigner, int, error) {
	i := len(line) - len(strings.TrimLeft(line, blanks))
	if i == len(line) || line[i] == '#' {
		return nil, 0, nil
	}
	s := &AllowedSigner{}
	// Principals: up to whitespace; a quote starts a quoted part that may
	// hold spaces and ends the field (OpenSSH's strdelimw).
	start := i
	for i < len(line) && !strings.ContainsRune(blanks+`"`, rune(line[i])) {
		i++
	}
	s.Principals = line[start:i]
	if i < len(line) && line[i] == '"' {
		end := strings.IndexByte(line[i+1:], '"')
		if end < 0 {
			return nil, i + 1, fmt.Errorf("principals: missing end quote")
		}
		s.Principals += line[i+1 : i+1+end]
		i += end + 2
	}
	if s.Principals == "" {
		return nil, start + 1, fmt.Errorf("empty principals")
	}
	rest, restCol := skipBlanks(line, i)
	if rest == "" {
		return nil, restCol, fmt.Errorf("missing key after the principals")
	}
	key, err := parseKeyField(rest)
	if err != nil && isKeyType(blankFields(rest)[0]) {
		return nil, restCol, fmt.Errorf("invalid key: %s", err)
	}
	if err != nil {
		// Not a key: options first, up to unquoted whitespace.
		end, oerr := pastOptions(rest)
		if oerr != nil {
			return nil, restCol + end, oerr
		}
		if col, err := s.parseOptions(rest[:end]); err != nil {
			return nil, restCol - 1 + col, fmt.Errorf("bad options: %s", err)
		}
		var keyCol int
		rest, keyCol = skipBlanks(line, restCol-1+end)
		if rest == "" {
			return nil, keyCol, fmt.Errorf("missing key after the options")
		}
		if key, err = parseKeyField(rest); err != nil {
			return nil, keyCol, fmt.Errorf("invalid key: %s", err)
		}
	}
	s.Key = key
	if !s.ValidAfter.IsZero() && !s.ValidBefore.IsZero() && !s.ValidBefore.After(s.ValidAfter) {
		return nil, restCol, fmt.Errorf(`bad options: "valid-before" time is before "valid-after"`)
	}
	return s, 0, nil
}

// blankFields splits s at runs of the blanks OpenSSH splits at (not \f or
// \v, which strings.Fields would).
func blankFields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(blanks, r) })
}

// skipBlanks returns line after i without leading blanks, and its column.
func skipBlanks(line string, i int) (string, int) {
	rest := strings.TrimLeft(line[i:], blanks)
	return rest, len(line) - len(rest) + 1
}

// isKeyType reports whether s names an SSH public key or certificate
// type, so that a malformed key is reported as one, not as options.
func isKeyType(s string) bool {
	s = strings.TrimSuffix(s, "-cert-v01@openssh.com")
	switch s {
	case ssh.KeyAlgoED25519, ssh.KeyAlgoRSA, "ssh-dss", ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
		ssh.KeyAlgoSKED25519, ssh.KeyAlgoSKECDSA256, "sk-ssh-ed25519", "sk-ecdsa-sha2-nistp256":
		return true
	}
	return false
}

// parseKeyField reads "type base64 [comment]".
func parseKeyField(s string) (ssh.PublicKey, error) {
	f := blankFields(s)
	if len(f) < 2 {
		return nil, fmt.Errorf("want a key type and base64 key")
	}
	blob, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		return nil, fmt.Errorf("key is not base64")
	}
	key, err := ssh.ParsePublicKey(blob)
	if err != nil {
		return nil, err
	}
	if key.Type() != f[0] {
		return nil, fmt.Errorf("key type %q does not match the key (%s)", f[0], key.Type())
	}
	return key, nil
}

// pastOptions is the length of the options field: up to whitespace outside
// quotes, \" inside quotes being a quote (sshkey_advance_past_options).
func pastOptions(s string) (int, error) {
	quoted := false
	i := 0
	for ; i < len(s) && (quoted || (s[i] != ' ' && s[i] != '\t')); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '"':
			i++
		case s[i] == '"':
			quoted = !quoted
		}
	}
	if quoted {
		return i, fmt.Errorf("options: missing end quote")
	}
	return i, nil
}

// parseOptions reads cert-authority, namespaces="…", valid-after="…" and
// valid-before="…", comma-separated, names case-insensitive, as
// sshsigopt_parse does; col is the 1-based column within opts of an error.
func (s *AllowedSigner) parseOptions(opts string) (int, error) {
	seenNS := false
	i := 0
	for i < len(opts) {
		rest := opts[i:]
		switch {
		case hasPrefixFold(rest, "cert-authority"):
			s.CertAuthority = true
			i += len("cert-authority")
		case hasPrefixFold(rest, "namespaces="):
			if seenNS {
				return i + 1, fmt.Errorf(`multiple "namespaces" clauses`)
			}
			seenNS = true
			v, n, err := dequote(rest[len("namespaces="):])
			if err != nil {
				return i + len("namespaces=") + 1, err
			}
			s.Namespaces, i = v, i+len("namespaces=")+n
		case hasPrefixFold(rest, "valid-after="), hasPrefixFold(rest, "valid-before="):
			name := rest[:strings.IndexByte(rest, '=')]
			v, n, err := dequote(rest[len(name)+1:])
			if err != nil {
				return i + len(name) + 2, err
			}
			t, err := parseSignerTime(v)
			if err != nil {
				return i + len(name) + 2, fmt.Errorf("%s: %s", strings.ToLower(name), err)
			}
			dst := &s.ValidAfter
			if strings.EqualFold(name, "valid-before") {
				dst = &s.ValidBefore
			}
			if !dst.IsZero() {
				return i + 1, fmt.Errorf("multiple %q clauses", strings.ToLower(name))
			}
			*dst, i = t, i+len(name)+1+n
		default:
			return i + 1, fmt.Errorf("unsupported option")
		}
		if i == len(opts) {
			break
		}
		if opts[i] != ',' {
			return i + 1, fmt.Errorf("unknown key option")
		}
		if i++; i == len(opts) {
			return i, fmt.Errorf("unexpected end-of-options")
		}
	}
	return 0, nil
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// dequote reads a "quoted" value with \" escapes and returns it and how many
// bytes it took.
func dequote(s string) (string, int, error) {
	if s == "" || s[0] != '"' {
		return "", 0, fmt.Errorf("missing start quote")
	}
	var b bytes.Buffer
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '"':
			b.WriteByte('"')
			i++
		case s[i] == '"':
			return b.String(), i + 1, nil
		default:
			b.WriteByte(s[i])
		}
	}
	return "", 0, fmt.Errorf("missing end quote")
}

// parseSignerTime reads YYYYMMDD[HHMM[SS]], in UTC with a trailing Z and
// local time without, as ssh-keygen does.
func parseSignerTime(v string) (time.Time, error) {
	loc := time.Local
	if strings.HasSuffix(v, "Z") || strings.HasSuffix(v, "z") {
		v, loc = v[:len(v)-1], time.UTC
	}
	layout := map[int]string{8: "20060102", 12: "200601021504", 14: "20060102150405"}[len(v)]
	if layout == "" {
		return time.Time{}, fmt.Errorf("invalid time %q: want YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS, Z for UTC", v)
	}
	t, err := time.ParseInLocation(layout, v, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid time %q", v)
	}
	return t, nil
}
