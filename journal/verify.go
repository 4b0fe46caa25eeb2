package journal

import (
	"errors"
	"fmt"
	"iter"

	"github.com/stormctl/stormctl/internal/exit"
)

// VerifyError names the first entry at which the journal stops being the
// chain that was written. It exits 4.
type VerifyError struct {
	Index  int    // 1-based position of the entry in the journal read
	Pos    string // stream id or file:line
	ID     string // entry id, when it decoded
	Reason string
}

func (e *VerifyError) Error() string {
	id := ""
	if e.ID != "" {
		id = " " + e.ID
	}
	return fmt.Sprintf("journal verification failed at entry %d%s (%s): %s", e.Index, id, e.Pos, e.Reason)
}

// ExitCode implements exit.Coder.
func (e *VerifyError) ExitCode() int { return exit.CheckFailed }

// Verify checks a whole journal from its first entry: each record must be
// an entry in canonical form whose hash matches its content, linked to the
// entry before it. An edited entry fails its hash; a deleted, inserted or
// moved one breaks a link. head, if not empty, is a chain head read before
// the journal (the control plane's JournalHead): the journal must reach it,
// which catches entries removed from the end, while entries appended after
// it was read are still checked. It returns how many entries it checked.
func Verify(recs iter.Seq2[Record, error], head string) (int, error) {
	n, prev, pos := 0, "", ""
	reached := head == ""
	for rec, err := range recs {
		if err != nil {
			return n, err
		}
		n++
		e, perr := Parse(rec.Data)
		fail := func(reason string) error { return &VerifyError{Index: n, Pos: rec.Pos, ID: e.ID, Reason: reason} }
		switch {
		case errors.Is(perr, errNotCanonical):
			return n, fail("the record is not as it was written (edited by hand)")
		case perr != nil && e.Hash != "":
			return n, fail("its content does not match its hash (edited)")
		case perr != nil:
			return n, fail(perr.Error())
		case e.PrevHash != prev && n == 1:
			return n, fail("the journal does not start with its first entry (entries before it were removed)")
		case e.PrevHash != prev:
			return n, fail(fmt.Sprintf("it does not follow the entry before it (%s): an entry was removed, inserted or moved here", pos))
		}
		prev, pos = e.Hash, rec.Pos
		reached = reached || prev == head
	}
	if !reached {
		return n, &VerifyError{Index: n, Pos: pos, Reason: fmt.Sprintf("the journal ends at hash %.12s… without reaching the head %.12s…: entries after it were removed", prev, head)}
	}
	return n, nil
}
