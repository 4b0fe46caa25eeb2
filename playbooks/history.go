package playbooks

import (
	"github.com/stormctl/stormctl/journal"
)

// History returns, per step id, the latest state the journal records for
// playbook pb and incident: which steps are done, by whom and when. Entries
// of other incidents and playbooks are ignored; entries recorded by another
// version of the playbook count too (their Version says which).
func History(pb *Playbook, incident string, entries []journal.Entry) map[string]StepState {
	out := map[string]StepState{}
	for _, e := range entries {
		if e.Playbook != pb.Name || e.Incident != incident || e.Step == "" {
			continue
		}
		var status Status
		switch e.Event {
		case journal.PlaybookPassed:
			status = Passed
		case journal.PlaybookFailed:
			status = Failed
		case journal.PlaybookSkipped:
			status = Skipped
		default:
			continue
		}
		s := pb.Step(e.Step)
		if s == nil {
			continue
		}
		at := e.Time
		st := StepState{ID: s.ID, Type: s.Type, Title: s.Title, RollbackOf: s.rollbackOf, Status: status,
			Outcome: e.Outcome, Error: e.Error, Actor: e.Actor, At: &at, Earlier: true, Version: e.PlaybookVersion,
			Evidence: e.Evidence, ActionID: e.ActionID, Reason: e.Reason, Forced: e.Forced}
		if s.Type == Ask {
			st.Answer = e.Value
		}
		out[s.ID] = st
	}
	return out
}

// Runs lists the playbook.started and playbook.finished entries of pb for
// the incident, in journal order.
func Runs(pb *Playbook, incident string, entries []journal.Entry) []journal.Entry {
	var out []journal.Entry
	for _, e := range entries {
		if e.Playbook == pb.Name && e.Incident == incident && (e.Event == journal.PlaybookStarted || e.Event == journal.PlaybookFinished) {
			out = append(out, e)
		}
	}
	return out
}
