package kubernetes

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// edit is what a lever does to one part of an object: the subtree at save
// is saved whole (and restored whole), and each pointer of set, at or
// under save, is given its value; a nil value removes the field (Linkerd's
// retry annotations, whose absence is what "no retries" says).
type edit struct {
	save string
	set  map[string]any
}

// FieldChange is one field the actuator changed, as JSON ("null" absent).
type FieldChange struct {
	Path   string          `json:"path"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// Conflict is a field the actuator set that another writer changed while the
// lever held; the actuator leaves it as that writer left it.
type Conflict struct {
	Path string          `json:"path"`
	Set  json.RawMessage `json:"set"`
	Now  json.RawMessage `json:"now"`
}

// hold applies lever member (action actionID) to work through edits. The
// first hold saves the values before; later holds keep them, so a
// superseding action still restores what was there before stormctl. Fields
// someone else changed since the actuator set them are reported and left.
func hold(work map[string]any, saved map[string]*Saved, member, actionID string, edits []edit) ([]FieldChange, []Conflict, error) {
	s := saved[member]
	if s == nil {
		s = &Saved{Before: map[string]json.RawMessage{}, Set: map[string]json.RawMessage{}}
		saved[member] = s
	}
	s.ActionID = actionID
	changes, conflicts, err := restoreStale(work, s, member, edits)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range edits {
		takeOver(saved, member, e.save)
		if _, had := s.Before[e.save]; !had {
			s.Before[e.save] = rawAt(work, e.save)
		}
		for _, ptr := range slices.Sorted(maps.Keys(e.set)) {
			want := mustJSON(e.set[ptr])
			now := rawAt(work, ptr)
			if prev, wrote := s.Set[ptr]; wrote && !sameJSON(now, prev) {
				conflicts = append(conflicts, Conflict{Path: ptr, Set: prev, Now: now})
				continue
			}
			s.Set[ptr] = want
			if sameJSON(now, want) {
				continue
			}
			if e.set[ptr] == nil {
				remove(work, ptr)
			} else if err := set(work, ptr, e.set[ptr]); err != nil {
				return nil, nil, err
			}
			changes = append(changes, FieldChange{Path: ptr, Before: now, After: want})
		}
	}
	return changes, conflicts, nil
}

// restoreStale puts back, as a release would, the subtrees the member saved
// that its edits no longer change: an off that removed Linkerd's retry
// annotations, superseded by a cap that sets only the limit.
func restoreStale(work map[string]any, s *Saved, member string, edits []edit) ([]FieldChange, []Conflict, error) {
	stale := &Saved{Before: map[string]json.RawMessage{}, Set: map[string]json.RawMessage{}}
	for save, before := range s.Before {
		if slices.ContainsFunc(edits, func(e edit) bool { return e.save == save }) {
			continue
		}
		stale.Before[save] = before
		delete(s.Before, save)
		for ptr, v := range s.Set {
			if ptr == save || strings.HasPrefix(ptr, save+"/") {
				stale.Set[ptr] = v
				delete(s.Set, ptr)
			}
		}
	}
	if len(stale.Before) == 0 {
		return nil, nil, nil
	}
	return restore(work, map[string]*Saved{member: stale}, member)
}

// takeOver moves the subtree at save, with its original value, from any
// other lever that saved it to member: each subtree is held by one lever, and
// whoever holds it last restores the value from before stormctl. (An edge
// lever taking a route from a service-wide one, say.)
func takeOver(saved map[string]*Saved, member, save string) {
	s := saved[member]
	for _, other := range slices.Sorted(maps.Keys(saved)) {
		o := saved[other]
		before, ok := o.Before[save]
		if other == member || !ok {
			continue
		}
		if _, mine := s.Before[save]; !mine {
			s.Before[save] = before
		}
		delete(o.Before, save)
		for ptr, v := range o.Set {
			if ptr == save || strings.HasPrefix(ptr, save+"/") {
				if _, mine := s.Set[ptr]; !mine {
					s.Set[ptr] = v
				}
				delete(o.Set, ptr)
			}
		}
		if len(o.Before) == 0 {
			delete(saved, other)
		}
	}
}

// describeConflicts says which fields another writer changed, and who, from
// the object's managedFields.
func describeConflicts(obj map[string]any, cs []Conflict) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		who := "another writer"
		if m := managerOf(obj, c.Path); m != "" {
			who = "field manager " + m
		}
		parts[i] = fmt.Sprintf("%s is %s, set by %s (stormctl set %s)", c.Path, c.Now, who, c.Set)
	}
	return strings.Join(parts, "; ")
}
