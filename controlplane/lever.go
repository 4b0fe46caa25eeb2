package controlplane

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// maxPrevious bounds how many superseded levers a lever carries, so a
// script that keeps superseding cannot grow a lever without limit.
const maxPrevious = 4

func validate(l lever.Lever, now time.Time) error {
	var problems []string
	if !slices.Contains(lever.Kinds, l.Kind) {
		problems = append(problems, fmt.Sprintf("unknown kind %q", l.Kind))
	}
	if strings.TrimSpace(l.Target) == "" {
		problems = append(problems, "empty target")
	}
	if l.Value == "" {
		problems = append(problems, "empty value")
	}
	if !l.ExpiresAt.After(now) {
		problems = append(problems, "expiry not in the future")
	}
	if len(problems) > 0 {
		return exit.NewUsage(fmt.Errorf("lever %s: %s", lever.Member(l.Kind, l.Target), strings.Join(problems, ", ")))
	}
	return nil
}

// trimPrevious copies l, keeping at most depth levels of Previous.
func trimPrevious(l *lever.Lever, depth int) *lever.Lever {
	if l == nil || depth == 0 {
		return nil
	}
	c := *l
	c.Previous = trimPrevious(l.Previous, depth-1)
	return &c
}

// state is the journal's view of a lever.
func state(l *lever.Lever) *journal.LeverState {
	if l == nil {
		return nil
	}
	return &journal.LeverState{
		Value: l.Value, ActionID: l.ActionID, Actor: l.Actor, Reason: l.Reason, Incident: l.Incident,
		CreatedAt: l.CreatedAt.UTC(), ExpiresAt: l.ExpiresAt.UTC(), Version: l.Version,
	}
}

// fillEntry completes the journal fields a lever determines, keeping what
// the caller set.
func fillEntry(e *journal.Entry, ev journal.Event, l *lever.Lever) {
	if e.Event == "" {
		e.Event = ev
	}
	e.Kind, e.Target = string(l.Kind), l.Target
	set := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	set(&e.Value, l.Value)
	set(&e.ActionID, l.ActionID)
	set(&e.Actor, l.Actor)
	set(&e.Reason, l.Reason)
	set(&e.Incident, l.Incident)
}

// sortLevers orders levers by kind (in Kinds order) then target.
func sortLevers(ls []lever.Lever) {
	slices.SortFunc(ls, func(a, b lever.Lever) int {
		if c := slices.Index(lever.Kinds, a.Kind) - slices.Index(lever.Kinds, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Target, b.Target)
	})
}
