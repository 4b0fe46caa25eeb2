package tui

import (
	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// Text read from the control plane is untrusted: anyone who can write
// Redis can put an escape sequence in a reason that would clear and
// rewrite every dashboard watching it. Each text field becomes one safe
// line (sanitize.Line) as it arrives, before any component lays it out;
// View guards the whole frame once more (sanitize.Frame).

func safeLever(l *lever.Lever) *lever.Lever {
	if l == nil {
		return nil
	}
	c := *l
	c.Kind = lever.Kind(sanitize.Line(string(l.Kind)))
	for _, f := range []*string{&c.Target, &c.Value, &c.ActionID, &c.Actor, &c.Reason, &c.Incident} {
		*f = sanitize.Line(*f)
	}
	c.Previous = safeLever(l.Previous)
	return &c
}

func safeLevers(ls []lever.Lever) []lever.Lever {
	out := make([]lever.Lever, len(ls))
	for i := range ls {
		out[i] = *safeLever(&ls[i])
	}
	return out
}

func safeChange(c lever.Change) lever.Change {
	c.Target = sanitize.Line(c.Target)
	c.Lever = safeLever(c.Lever)
	return c
}

func safeEntries(es []journal.Entry) []journal.Entry {
	out := make([]journal.Entry, len(es))
	for i, e := range es {
		for _, f := range []*string{&e.Actor, &e.Incident, &e.Playbook, &e.Step, &e.ActionID, &e.Kind, &e.Target,
			&e.Value, &e.Reason, &e.Outcome, &e.Error} {
			*f = sanitize.Line(*f)
		}
		out[i] = e
	}
	return out
}

func safeApprovals(as []actions.Approval) []actions.Approval {
	out := make([]actions.Approval, len(as))
	for i, a := range as {
		for _, f := range []*string{&a.ID, &a.ActionID, &a.Target, &a.Value, &a.Reason, &a.Actor, &a.Incident} {
			*f = sanitize.Line(*f)
		}
		out[i] = a
	}
	return out
}
