package controlplane

import (
	"context"
	"time"

	"github.com/stormctl/stormctl/journal"
)

// LostWrites are the lever writes of this machine's written record (the
// entries its writers appended, journal.AppendWritten) that the journal no
// longer holds, as after a failover to a replica that had not caught up.
type LostWrites struct {
	// Lost are the entries to restore, in the order they were written.
	Lost []journal.Entry
	// Done are the ids of the record's entries that need nothing more:
	// still in the journal, or restored already by an earlier sync (an
	// applied, released, extended or requested entry names them in
	// Restores). journal.DropWritten forgets them.
	Done map[string]bool
}

// restoring are the events of an entry that restored a lost one (a
// request is a restore waiting for its approval); a refusal or a note is
// not, so a refused restore is tried again.
var restoring = map[journal.Event]bool{journal.ActionApplied: true, journal.ActionReleased: true,
	journal.ActionExtended: true, journal.ActionRequested: true}

// LostWrites compares the written record at path (Store.WrittenPath) with
// the journal since the record's first entry. It changes nothing.
func (s *Store) LostWrites(ctx context.Context, path string) (LostWrites, error) {
	res := LostWrites{Done: map[string]bool{}}
	written, err := journal.ReadWritten(path)
	if err != nil || len(written) == 0 {
		return res, err
	}
	present := map[string]bool{}
	// An hour of slack: entries are stamped by this machine's clock, the
	// stream ids by the server's.
	for e, err := range journal.Entries(s.Journal().Range(ctx, journal.StreamID(written[0].Time.Add(-time.Hour)), "+")) {
		if err != nil {
			return res, err
		}
		present[e.ID] = true
		if r := e.Restores; r != nil && restoring[e.Event] {
			present[r.Entry] = true
		}
	}
	for _, e := range written {
		if present[e.ID] {
			res.Done[e.ID] = true
			continue
		}
		res.Lost = append(res.Lost, e)
	}
	return res, nil
}
