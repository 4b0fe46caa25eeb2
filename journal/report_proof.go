package journal

import (
	"fmt"
	"strings"
	"time"
)

// ReportOptions configure BuildReportWith.
type ReportOptions struct {
	Filter Filter
	// Head, if not empty, is the control plane's journal head, which the
	// journal must reach.
	Head string
	// AllowedSigners, if set, checks each entry's signer (see
	// VerifyOptions); without it signatures are only checked to be valid.
	AllowedSigners *AllowedSigners
	// RequireSignatures makes an unsigned entry a failure of the proof.
	RequireSignatures bool
	// Signer signs the closing checkpoint as Actor; nil leaves it unsigned.
	Signer Signer
	Actor  string
	// Now is the checkpoint's time and the report's Generated; nil is
	// time.Now.
	Now func() time.Time
}

func (o ReportOptions) verifyOptions() VerifyOptions {
	return VerifyOptions{Head: o.Head, AllowedSigners: o.AllowedSigners, RequireSignatures: o.RequireSignatures}
}

// EntrySigner is what the report's timeline says of one entry's
// signature: Text ("signed by alice", "unsigned", "bad signature: …") and
// Class, the style of its state ("ok", "bad", "muted").
type EntrySigner struct {
	Text, Class string
}

// signerOf is the timeline's signer cell of what Check found; required
// says an unsigned entry is a problem.
func signerOf(res EntryResult, required bool) EntrySigner {
	withDetail := func(s string) string {
		if res.Detail != "" {
			s += ": " + res.Detail
		}
		return s
	}
	switch res.Status {
	case StatusVerified:
		// An expiry is signed by whoever reaped it: name them.
		return EntrySigner{Text: "signed by " + strings.TrimPrefix(res.Signer, ExpiryActor+" signed by "), Class: "ok"}
	case StatusSigned:
		return EntrySigner{Text: "signed by key " + res.Signer + ", not checked against allowed signers", Class: "muted"}
	case StatusUnsigned: // ProblemUnsigned too: the same word
		if required {
			return EntrySigner{Text: "unsigned, signatures required", Class: "bad"}
		}
		return EntrySigner{Text: "unsigned", Class: "muted"}
	}
	return EntrySigner{Text: withDetail(res.Status), Class: "bad"}
}

// proofChecks are Check's Proven sentences as the report's proof lines:
// the chain, the signatures, then each checkpoint. A line is OK when it
// proves its part, FAILED when it found a forgery or a cut, and Skipped
// ("not proven") when there was nothing to prove it with; required makes
// an unsigned entry a failure.
func proofChecks(v *Verification, required bool) []ProofCheck {
	if len(v.Proven) < 2 {
		v.Proven = v.proven()
	}
	chainOK := v.Failure == nil && (v.HeadExpected == "" || v.HeadReached)
	out := []ProofCheck{{Name: "hash chain", OK: chainOK, Detail: v.Proven[0]}}
	sig := ProofCheck{Name: "signatures", Detail: v.Proven[1]}
	bad := v.ProblemCount
	if !required {
		bad -= v.problems(ProblemUnsigned)
	}
	switch {
	case bad > 0:
	case v.Signed == 0 || v.AllowedSigners == "" || v.Unsigned > 0:
		sig.Skipped = true
	default:
		sig.OK = true
	}
	out = append(out, sig)
	if len(v.Checkpoints) == 0 {
		return append(out, ProofCheck{Name: "checkpoints", Skipped: true, Detail: strings.Join(v.Proven[2:], "; ")})
	}
	for i, c := range v.Checkpoints {
		detail := ""
		if 2+i < len(v.Proven) {
			detail = v.Proven[2+i]
		}
		out = append(out, ProofCheck{Name: "checkpoint " + c.Source, OK: c.OK(), Detail: detail})
	}
	return out
}

// close makes the closing checkpoint of the journal read, as every export
// ends with, signed by o.Signer. A journal whose chain is broken or cut
// gets none: signing it would vouch for the break (as journal checkpoint
// refuses to).
func (p *Proof) close(t *tally, o ReportOptions, v *Verification) error {
	if !v.ChainIntact || (v.HeadExpected != "" && !v.HeadReached) {
		p.CheckpointNote = "No closing checkpoint: the chain is broken or cut, and signing it would vouch for the break."
		return nil
	}
	cp, err := t.checkpoint(ExportOptions{Signer: o.Signer, Actor: o.Actor, Now: o.Now})
	if err != nil {
		return err
	}
	p.Checkpoint = &cp
	if o.Signer != nil {
		p.CheckpointKey = KeyFingerprint(o.Signer.PublicKey())
	}
	return nil
}

// CheckpointText says what the closing checkpoint covers and who signed it.
func (p Proof) CheckpointText() string {
	cp := p.Checkpoint
	if cp == nil {
		return p.CheckpointNote
	}
	s := fmt.Sprintf("%d entries read (filtered out or not), head %s, at %s; ", cp.Count, cp.Head, cp.Time.UTC().Format(time.RFC3339))
	if cp.Signature == "" {
		return s + "unsigned (no journal signing key): it shows accidental edits only"
	}
	return s + fmt.Sprintf("signed by %s with %s", cp.Actor, p.CheckpointKey)
}

// CheckpointJSON is the closing checkpoint's stored form, which
// `journal verify --checkpoint REPORT.html` reads back from the report.
func (p Proof) CheckpointJSON() string {
	if p.Checkpoint == nil {
		return ""
	}
	return string(p.Checkpoint.JSON())
}
