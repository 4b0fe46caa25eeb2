package journal

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/crypto/ssh"
)

// ExpiryActor is the actor of action.expired entries: nobody acted, the
// lever's TTL ran out. Their signature is by whoever journaled the expiry,
// so any allowed signer may sign them.
const ExpiryActor = "stormctl (expiry)"

// Verification is what Check proved about a journal, for `journal verify` and
// the HTML report. Proven states it in sentences.
type Verification struct {
	Entries     int    `json:"entries"`
	ChainIntact bool   `json:"chain_intact"`
	Head        string `json:"head,omitempty"` // hash of the last entry read
	// HeadExpected is the head the journal had to reach (the control
	// plane's), "" when none was given; HeadReached says it did.
	HeadExpected string `json:"head_expected,omitempty"`
	HeadReached  bool   `json:"head_reached"`
	// AllowedSigners is the file signatures were checked against; "" when
	// they were only checked to be valid for the key they name.
	AllowedSigners string `json:"allowed_signers,omitempty"`
	Signed         int    `json:"signed"`   // entries carrying a signature
	Verified       int    `json:"verified"` // signed by an allowed key of their actor
	Unsigned       int    `json:"unsigned"`
	// BySigner counts verified entries per actor.
	BySigner map[string]int `json:"by_signer,omitempty"`
	// Keys are the fingerprints of the keys of valid signatures, the
	// first 20; KeyCount counts them all.
	Keys         []string           `json:"keys,omitempty"`
	KeyCount     int                `json:"key_count"`
	Problems     []EntryProblem     `json:"problems,omitempty"` // the first 100
	ProblemCount int                `json:"problem_count"`
	Checkpoints  []CheckpointResult `json:"checkpoints,omitempty"`
	// Failure is the chain break that stopped the check, if any.
	Failure *VerifyError `json:"failure,omitempty"`
	Proven  []string     `json:"proven"`

	keySeen map[string]bool
}

// Problem kinds of an entry's signature.
const (
	ProblemUnsigned     = "unsigned"
	ProblemBadSignature = "bad signature"
	ProblemWrongSigner  = "wrong signer"
)

// EntryProblem is one entry whose signature proves nothing.
type EntryProblem struct {
	Index   int    `json:"index"`
	Pos     string `json:"pos"`
	ID      string `json:"id"`
	Actor   string `json:"actor"`
	Problem string `json:"problem"`
	Detail  string `json:"detail,omitempty"`
}

func (p EntryProblem) String() string {
	s := fmt.Sprintf("%s entry by %q", p.Problem, p.Actor)
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	return s
}

// SigStatus is what a checkpoint's signature proved.
type SigStatus string

// Checkpoint signature states; a bad one is "bad signature: …" or
// "wrong signer: …".
const (
	SigUnsigned   SigStatus = "unsigned"
	SigValid      SigStatus = "signed by an allowed signer"
	SigNotChecked SigStatus = "signed, key not checked against allowed signers"
)

// CheckpointResult is one checkpoint checked against the journal.
type CheckpointResult struct {
	Source     string     `json:"source"`
	Checkpoint Checkpoint `json:"checkpoint"`
	Matched    bool       `json:"matched"`
	Signature  SigStatus  `json:"signature"`
	Signer     string     `json:"signer,omitempty"` // principal, or key fingerprint when not checked
	Detail     string     `json:"detail,omitempty"` // why it failed
}

// OK reports whether the checkpoint matched and its signature did not fail.
func (r CheckpointResult) OK() bool { return r.Matched && r.Detail == "" }

// OK reports whether nothing failed.
func (r *Verification) OK() bool {
	if r.Failure != nil || r.ProblemCount > 0 || (r.HeadExpected != "" && !r.HeadReached) {
		return false
	}
	for _, c := range r.Checkpoints {
		if !c.OK() {
			return false
		}
	}
	return true
}

// maxKeys bounds the fingerprints a report lists: anyone can sign with
// fresh keys, one per forged entry.
const maxKeys = 20

func (r *Verification) addKey(k ssh.PublicKey) {
	fp := keyName(k)
	if r.keySeen == nil {
		r.keySeen = map[string]bool{}
	}
	if r.keySeen[fp] {
		return
	}
	r.keySeen[fp] = true
	r.KeyCount++
	if len(r.Keys) < maxKeys {
		r.Keys = append(r.Keys, fp)
	}
}

func keyName(k ssh.PublicKey) string { return ssh.FingerprintSHA256(k) }

// KeyFingerprint is the key's SHA256 fingerprint, as ssh-keygen -l shows it.
func KeyFingerprint(k ssh.PublicKey) string { return keyName(k) }

func cpTime(c Checkpoint) string { return c.Time.UTC().Format(time.RFC3339) }

// AllowsAny reports whether key may sign, as any principal, at at, and
// returns the principals of its line.
func (a *AllowedSigners) AllowsAny(key ssh.PublicKey, at time.Time) (ok bool, principals, why string) {
	why = fmt.Sprintf("signed by %s, a key not in %s", keyName(key), a.Path)
	for _, s := range a.Signers {
		if s.holds(key) && !s.CertAuthority {
			if err := s.valid(key, "", at); err != nil {
				why = fmt.Sprintf("%s:%d: %s", a.Path, s.Line, err)
				continue
			}
			return true, s.Principals, ""
		}
	}
	return false, "", why
}

// proven says, in sentences, what the check established and what it
// could not.
func (r *Verification) proven() []string {
	var out []string
	switch {
	case r.Failure != nil:
		out = append(out, fmt.Sprintf("chain broken at entry %d: %s", r.Failure.Index, r.Failure.Reason))
	case r.Entries == 0:
		out = append(out, "the journal is empty")
	default:
		s := fmt.Sprintf("chain intact: %d entries linked by SHA-256 from the first to head %.12s", r.Entries, r.Head)
		switch {
		case r.HeadReached:
			s += ", reaching the control plane's head (which is in Redis too: only signatures and checkpoints hold against its writers)"
		case r.HeadExpected != "":
			s += fmt.Sprintf(", but not reaching the head %.12s: entries were cut from the end", r.HeadExpected)
		}
		out = append(out, s)
	}
	out = append(out, r.signatureSentence())
	out = append(out, r.checkpointSentences()...)
	for i := range out {
		out[i] = clean(out[i])
	}
	return out
}

// clean is s when it is printable, else s Go-quoted: actors, ids and
// principals come from Redis and files, and must not put control
// characters (terminal escapes) on a screen.
func clean(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

func (r *Verification) signatureSentence() string {
	bad := r.ProblemCount - r.problems(ProblemUnsigned)
	switch {
	case r.Signed == 0:
		return "unsigned: the chain detects accidental edits only, not someone who can write Redis" + r.unsignedByHolders()
	case r.AllowedSigners == "":
		keys := strings.Join(r.Keys, ", ")
		if r.KeyCount > len(r.Keys) {
			keys = fmt.Sprintf("%d keys (first: %s)", r.KeyCount, keys)
		}
		return fmt.Sprintf("%d of %d entries carry valid signatures by %s, not checked against allowed signers (give --allowed-signers): who holds the keys is unproven",
			r.Signed-bad, r.Entries, keys)
	}
	s := fmt.Sprintf("%d of %d entries signed by allowed signers whose principal is the entry's actor (%s)", r.Verified, r.Entries, r.signerCounts())
	if bad > 0 {
		s += fmt.Sprintf("; %d badly signed (first: entry %d, %s)", bad, r.firstProblem(false).Index, r.firstProblem(false))
	}
	if r.Unsigned > 0 {
		s += fmt.Sprintf("; %d unsigned, which prove nothing against someone who can write Redis", r.Unsigned)
	}
	return s + r.unsignedByHolders()
}

// unsignedByHolders counts the unsigned entries whose actor holds an
// allowed key: whoever can write Redis may have forged them.
func (r *Verification) unsignedByHolders() string {
	n := r.problems(ProblemUnsigned)
	if n == 0 || r.AllowedSigners == "" {
		return ""
	}
	return fmt.Sprintf("; %d unsigned by actors who hold an allowed key (first: entry %d by %q)", n, r.firstProblem(true).Index, r.firstProblem(true).Actor)
}

func (r *Verification) problems(kind string) int {
	n := 0
	for _, p := range r.Problems {
		if p.Problem == kind {
			n++
		}
	}
	return n
}

func (r *Verification) firstProblem(unsigned bool) EntryProblem {
	for _, p := range r.Problems {
		if (p.Problem == ProblemUnsigned) == unsigned {
			return p
		}
	}
	return EntryProblem{}
}

func (r *Verification) signerCounts() string {
	names := slices.Sorted(maps.Keys(r.BySigner))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, r.BySigner[n])
	}
	return strings.Join(parts, ", ")
}

func (r *Verification) checkpointSentences() []string {
	if len(r.Checkpoints) == 0 {
		return []string{"no checkpoint: entries cut from the end since the last checkpoint cannot be detected (give --checkpoint)"}
	}
	var out []string
	for _, c := range r.Checkpoints {
		if !c.OK() {
			out = append(out, "checkpoint "+c.Detail)
			continue
		}
		s := fmt.Sprintf("checkpoint of %s (%d entries, head %.12s, %s", cpTime(c.Checkpoint), c.Checkpoint.Count, c.Checkpoint.Head, c.Signature)
		if c.Signer != "" {
			s += " " + c.Signer
		}
		s += ") matched: nothing up to it was cut or rewritten"
		if c.Signature == SigUnsigned {
			s += ", as far as the checkpoint file itself can be trusted"
		}
		out = append(out, s)
	}
	return out
}
