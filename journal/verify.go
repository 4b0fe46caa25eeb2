package journal

import (
	"errors"
	"fmt"
	"iter"

	"github.com/stormctl/stormctl/internal/exit"
)

// VerifyError names the first entry at which the journal stops being the
// chain that was written, or fails a signature or checkpoint check. It
// exits 4.
type VerifyError struct {
	Index  int    `json:"index"`        // 1-based position of the entry in the journal read
	Pos    string `json:"pos"`          // stream id or file:line
	ID     string `json:"id,omitempty"` // entry id, when it decoded
	Reason string `json:"reason"`
}

func (e *VerifyError) Error() string {
	id := ""
	if e.ID != "" {
		id = " " + e.ID
	}
	return clean(fmt.Sprintf("journal verification failed at entry %d%s (%s): %s", e.Index, id, e.Pos, e.Reason))
}

// ExitCode implements exit.Coder.
func (e *VerifyError) ExitCode() int { return exit.CheckFailed }

// Verify checks the hash chain of a whole journal from its first entry (see
// Check) and returns how many entries it checked. head, if not empty, is a
// chain head read before the journal (the control plane's JournalHead).
func Verify(recs iter.Seq2[Record, error], head string) (int, error) {
	rep, err := Check(recs, VerifyOptions{Head: head})
	return rep.Entries, err
}

// VerifyOptions says what Check proves beyond the hash chain.
type VerifyOptions struct {
	// Head, if not empty, is a chain head read before the journal (the
	// control plane's JournalHead): the journal must reach it, which catches
	// entries removed from the end, while entries appended after it was read
	// are still checked.
	Head string
	// AllowedSigners, if set, checks each signature's key against it: the
	// entry's actor must be a principal of the key.
	AllowedSigners *AllowedSigners
	// RequireSignatures fails on any unsigned entry or checkpoint. Without
	// AllowedSigners it proves little: anyone can sign with a fresh key.
	RequireSignatures bool
	// AllowUnsigned accepts an unsigned entry whose actor holds a key in
	// AllowedSigners. Without it such an entry fails: whoever can write
	// Redis could have appended it in that actor's name.
	AllowUnsigned bool
	// Checkpoints kept outside the journal; each must match the entry at
	// its count. A checkpoint at the end of the records (an export) is
	// checked too.
	Checkpoints []SourcedCheckpoint
	// OnEntry, if set, is called with each entry that passed the chain
	// check and what its signature proved, in order, so that a renderer
	// (the HTML report) can show it beside the entry while streaming.
	OnEntry func(EntryResult)
}

// EntryResult is what Check established about one entry's signature.
type EntryResult struct {
	Index int
	Pos   string
	Entry Entry
	// Status is StatusVerified, StatusSigned, StatusUnsigned or a problem
	// (ProblemUnsigned under RequireSignatures, ProblemBadSignature,
	// ProblemWrongSigner, with Detail).
	Status string
	// Signer vouches for the entry: its actor (or "stormctl (expiry)
	// signed by …") when verified, the key fingerprint when only signed.
	Signer string
	Detail string
}

// Signature states of an entry that are not problems.
const (
	StatusVerified = "verified"
	StatusSigned   = "signed, key not checked"
	StatusUnsigned = "unsigned"
)

// SourcedCheckpoint is a checkpoint and where it was read.
type SourcedCheckpoint struct {
	Source string
	// Local marks a high-water mark kept on this machine (journal.Mark):
	// never signed, so RequireSignatures does not refuse it.
	Local bool
	Checkpoint
}

// Check verifies a whole journal from its first entry: each record must be
// an entry in canonical form whose hash matches its content, linked to the
// entry before it. An edited entry fails its hash; a deleted, inserted or
// moved one breaks a link. Signatures are checked as each entry is read
// (see Verification for what each proves) and checkpoints at their count. It
// stops at the first chain break; the error is a *VerifyError naming the
// first entry that fails, and the Verification says what was proven regardless.
func Check(recs iter.Seq2[Record, error], o VerifyOptions) (*Verification, error) {
	c := newChecker(o)
	for rec, err := range recs {
		if err != nil {
			c.rep.Proven = c.rep.proven()
			return c.rep, err
		}
		if c.trailer != nil {
			return c.rep, c.fail(c.rep.Entries+1, rec.Pos, "", "an entry follows the export's closing checkpoint")
		}
		if IsCheckpoint(rec.Data) {
			if err := c.closingCheckpoint(rec); err != nil {
				return c.rep, err
			}
			continue
		}
		if err := c.entry(rec); err != nil {
			return c.rep, err
		}
	}
	return c.rep, c.finish()
}

// checker is the state of one Check.
type checker struct {
	o         VerifyOptions
	rep       *Verification
	prev, pos string
	reached   bool
	trailer   *SourcedCheckpoint
	seen      map[string]int // hash → index, of checkpointed heads only
	firstBad  *VerifyError
}

func newChecker(o VerifyOptions) *checker {
	c := &checker{o: o, rep: &Verification{HeadExpected: o.Head, BySigner: map[string]int{}, ChainIntact: true}, reached: o.Head == "", seen: map[string]int{}}
	if o.AllowedSigners != nil {
		c.rep.AllowedSigners = o.AllowedSigners.Path
	}
	for _, cp := range o.Checkpoints {
		c.seen[cp.Head] = 0
	}
	return c
}

// fail stops the check: the records are not a journal as written.
func (c *checker) fail(index int, pos, id, reason string) error {
	c.rep.ChainIntact = false
	c.rep.Failure = &VerifyError{Index: index, Pos: pos, ID: id, Reason: reason}
	c.rep.Proven = c.rep.proven()
	return c.rep.Failure
}

func (c *checker) entry(rec Record) error {
	c.rep.Entries++
	n := c.rep.Entries
	e, canon, perr := parse(rec.Data)
	chainFail := func(reason string) error { return c.fail(n, rec.Pos, e.ID, reason) }
	switch {
	case errors.Is(perr, errNotCanonical):
		return chainFail("the record is not as it was written (edited by hand)")
	case perr != nil && e.Hash != "":
		return chainFail("its content does not match its hash (edited)")
	case perr != nil:
		return chainFail(perr.Error())
	case e.PrevHash != c.prev && n == 1:
		return chainFail("the journal does not start with its first entry (entries before it were removed)")
	case e.PrevHash != c.prev:
		return chainFail(fmt.Sprintf("it does not follow the entry before it (%s): an entry was removed, inserted or moved here", c.pos))
	}
	c.prev, c.pos = e.Hash, rec.Pos
	c.rep.Head = e.Hash
	c.reached = c.reached || c.prev == c.o.Head
	if _, ok := c.seen[e.Hash]; ok {
		c.seen[e.Hash] = n
	}
	res := c.signature(n, rec.Pos, e, canon)
	if c.o.OnEntry != nil {
		c.o.OnEntry(res)
	}
	return nil
}

// signature checks one entry's signature and records what it proves.
func (c *checker) signature(n int, pos string, e Entry, canon []byte) EntryResult {
	res := EntryResult{Index: n, Pos: pos, Entry: e, Status: StatusUnsigned}
	fail := func(kind, detail string) EntryResult {
		res.Status, res.Detail = kind, detail
		c.problem(EntryProblem{Index: n, Pos: pos, ID: e.ID, Actor: e.Actor, Problem: kind, Detail: detail})
		return res
	}
	if e.Signature == "" {
		c.rep.Unsigned++
		if c.o.RequireSignatures {
			return fail(ProblemUnsigned, "")
		}
		if c.o.AllowedSigners != nil && !c.o.AllowUnsigned {
			if where, ok := c.o.AllowedSigners.KeyFor(e.Actor, e.Time); ok {
				return fail(ProblemUnsigned, fmt.Sprintf("its actor holds an allowed key (%s); --allow-unsigned accepts it", where))
			}
		}
		return res
	}
	c.rep.Signed++
	key, err := verifySignature(canon, e.Signature)
	if err != nil {
		return fail(ProblemBadSignature, err.Error())
	}
	c.rep.addKey(key)
	res.Status, res.Signer = StatusSigned, keyName(key)
	if c.o.AllowedSigners == nil {
		return res
	}
	signer := e.Actor
	ok, why := c.o.AllowedSigners.Allows(key, e.Actor, e.Time)
	if !ok && e.Actor == ExpiryActor {
		// Nobody acted on an expiry: whoever reaped it is its writer, and
		// any allowed signer may be; the report names them.
		var principals string
		if ok, principals, why = c.o.AllowedSigners.AllowsAny(key, e.Time); ok {
			signer = ExpiryActor + " signed by " + principals
		}
	}
	if !ok {
		return fail(ProblemWrongSigner, why)
	}
	c.rep.Verified++
	c.rep.BySigner[signer]++
	res.Status, res.Signer = StatusVerified, signer
	return res
}

// maxProblems bounds the problems a report lists; all are counted.
const maxProblems = 100

func (c *checker) problem(p EntryProblem) {
	c.rep.ProblemCount++
	if len(c.rep.Problems) < maxProblems {
		c.rep.Problems = append(c.rep.Problems, p)
	}
	if c.firstBad == nil {
		c.firstBad = &VerifyError{Index: p.Index, Pos: p.Pos, ID: p.ID, Reason: p.String()}
	}
}

// closingCheckpoint takes the checkpoint that ends an export.
func (c *checker) closingCheckpoint(rec Record) error {
	cp, err := ParseCheckpoint(rec.Data)
	if err != nil {
		return c.fail(c.rep.Entries+1, rec.Pos, "", err.Error())
	}
	c.trailer = &SourcedCheckpoint{Source: rec.Pos, Checkpoint: cp}
	c.seen[cp.Head] = 0
	// A closing checkpoint covers the entries before it.
	if cp.Head == c.prev {
		c.seen[cp.Head] = c.rep.Entries
	}
	return nil
}

func (c *checker) finish() error {
	var firstErr error
	if !c.reached {
		c.rep.HeadReached = false
		firstErr = &VerifyError{Index: c.rep.Entries, Pos: c.pos, Reason: fmt.Sprintf("the journal ends at hash %.12s… without reaching the head %.12s…: entries after it were removed", c.prev, c.o.Head)}
	} else {
		c.rep.HeadReached = c.o.Head != ""
	}
	cps := c.o.Checkpoints
	if c.trailer != nil {
		cps = append(cps[:len(cps):len(cps)], *c.trailer)
	}
	for _, cp := range cps {
		res := c.checkpoint(cp)
		c.rep.Checkpoints = append(c.rep.Checkpoints, res)
		if !res.OK() && firstErr == nil {
			firstErr = &VerifyError{Index: cp.Count, Pos: cp.Source, Reason: "checkpoint " + res.Detail}
		}
	}
	if firstErr == nil && c.firstBad != nil {
		firstErr = c.firstBad
		if c.rep.ProblemCount > 1 {
			firstErr = &VerifyError{Index: c.firstBad.Index, Pos: c.firstBad.Pos, ID: c.firstBad.ID,
				Reason: fmt.Sprintf("%s (and %d more signature problems)", c.firstBad.Reason, c.rep.ProblemCount-1)}
		}
	}
	c.rep.Proven = c.rep.proven()
	return firstErr
}

// checkpoint matches one checkpoint against the journal read.
func (c *checker) checkpoint(cp SourcedCheckpoint) CheckpointResult {
	res := CheckpointResult{Source: cp.Source, Checkpoint: cp.Checkpoint}
	res.Signature, res.Signer = c.checkpointSignature(cp.Checkpoint)
	if res.Signature != SigValid && res.Signature != SigNotChecked && (res.Signature != SigUnsigned || (c.o.RequireSignatures && !cp.Local)) {
		// A checkpoint that is not what its signer signed proves nothing,
		// whatever it says.
		res.Detail = fmt.Sprintf("of %s: %s", cpTime(cp.Checkpoint), res.Signature)
		return res
	}
	at := c.seen[cp.Head]
	switch {
	case cp.Count == 0 || at == cp.Count:
		res.Matched = true
	case c.rep.Entries < cp.Count:
		res.Detail = fmt.Sprintf("of %s recorded %d entries, the journal has %d: entries were cut from its end", cpTime(cp.Checkpoint), cp.Count, c.rep.Entries)
	case at > 0:
		res.Detail = fmt.Sprintf("of %s recorded head %.12s… as entry %d, it is entry %d: entries before it were removed or inserted", cpTime(cp.Checkpoint), cp.Head, cp.Count, at)
	default:
		res.Detail = fmt.Sprintf("of %s recorded head %.12s… at entry %d, which the journal does not contain: the journal up to there was rewritten", cpTime(cp.Checkpoint), cp.Head, cp.Count)
	}
	return res
}

// checkpointSignature checks a checkpoint's signature by its actor.
func (c *checker) checkpointSignature(cp Checkpoint) (SigStatus, string) {
	if cp.Signature == "" {
		return SigUnsigned, ""
	}
	key, err := verifySignature(cp.Canonical(), cp.Signature)
	if err != nil {
		return SigStatus("bad signature: " + err.Error()), ""
	}
	if c.o.AllowedSigners == nil {
		return SigNotChecked, keyName(key)
	}
	if ok, why := c.o.AllowedSigners.Allows(key, cp.Actor, cp.Time); !ok {
		return SigStatus("wrong signer: " + why), ""
	}
	return SigValid, cp.Actor
}
