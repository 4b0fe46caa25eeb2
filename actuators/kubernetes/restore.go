package kubernetes

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// restore puts back, field by field, what lever member changed on work and
// forgets it. Each field under a saved subtree is judged on its own:
//
//   - a field the actuator set that still holds its value gets the value from
//     before (absent stays absent); one another writer changed is theirs, left
//     as it is and reported as a conflict;
//   - a field that was there before and now differs was changed by another
//     writer (the API server's defaulting only fills absent fields), so it
//     stays;
//   - a field that was absent before and is present now is either a default
//     the API server filled in because of the actuator's write (removed
//     again, as the object had it before) or another writer's addition (kept):
//     metadata.managedFields tells them apart, as defaults are owned by the
//     writer whose request caused them;
//   - a map the actuator's write created is removed once it is empty.
//
// So a human's edit of one sibling field during a freeze survives the
// release, and every other field the freeze changed goes back.
func restore(work map[string]any, saved map[string]*Saved, member string) ([]FieldChange, []Conflict, error) {
	s := saved[member]
	if s == nil {
		return nil, nil, nil
	}
	r := restorer{work: work, set: s.Set}
	for _, save := range slices.Sorted(maps.Keys(s.Before)) {
		var before any
		if err := json.Unmarshal(s.Before[save], &before); err != nil {
			return nil, nil, err
		}
		now, hasNow := lookup(work, save)
		v, present := r.merge(save, before, before != nil, now, hasNow)
		var err error
		if present {
			err = set(work, save, v)
		} else {
			remove(work, save)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	delete(saved, member)
	return r.changes, r.conflicts, nil
}

// restorer walks one saved subtree.
type restorer struct {
	work      map[string]any
	set       map[string]json.RawMessage
	changes   []FieldChange
	conflicts []Conflict
}

// merge returns the value ptr is restored to and whether it is present,
// recording the changes and conflicts on the way.
func (r *restorer) merge(ptr string, before any, hadBefore bool, now any, hasNow bool) (any, bool) {
	if want, ours := r.set[ptr]; ours {
		// A field the actuator removed (set null) is still as it left it
		// while it is absent.
		if hasNow && sameJSON(mustJSON(now), want) || !hasNow && sameJSON(want, json.RawMessage("null")) {
			r.change(ptr, now, hasNow, before, hadBefore)
			return before, hadBefore
		}
		r.conflicts = append(r.conflicts, Conflict{Path: ptr, Set: want, Now: rawAt(r.work, ptr)})
		return now, hasNow
	}
	bm, bIsMap := before.(map[string]any)
	nm, nIsMap := now.(map[string]any)
	if (bIsMap || !hadBefore) && (nIsMap || !hasNow) && (hadBefore || hasNow) {
		out := map[string]any{}
		mark := len(r.changes)
		for _, k := range slices.Sorted(maps.Keys(union(bm, nm))) {
			bv, bok := bm[k]
			nv, nok := nm[k]
			if v, ok := r.merge(ptr+"/"+escape(k), bv, bok, nv, nok); ok {
				out[k] = v
			}
		}
		if len(out) > 0 || (hadBefore && hasNow) {
			return out, true
		}
		// A map the actuator's write created, emptied again: one change
		// says it is gone, instead of one per default inside it.
		r.changes = r.changes[:mark]
		r.change(ptr, now, hasNow, nil, false)
		return nil, false
	}
	if r.setUnder(ptr) {
		// Another writer replaced a map the actuator set fields in with
		// something else: every field it set there is theirs now.
		for _, p := range slices.Sorted(maps.Keys(r.set)) {
			if strings.HasPrefix(p, ptr+"/") {
				r.conflicts = append(r.conflicts, Conflict{Path: p, Set: r.set[p], Now: rawAt(r.work, p)})
			}
		}
		return now, hasNow
	}
	switch {
	case hadBefore && hasNow && sameJSON(mustJSON(before), mustJSON(now)):
		return now, true
	case hadBefore || !hasNow:
		return now, hasNow // another writer's change (or both absent)
	case managerOf(r.work, ptr) != "":
		return now, true // another writer's addition
	}
	r.change(ptr, now, true, nil, false) // a default the actuator's write caused
	return nil, false
}

func (r *restorer) setUnder(ptr string) bool {
	for p := range r.set {
		if strings.HasPrefix(p, ptr+"/") {
			return true
		}
	}
	return false
}

func (r *restorer) change(ptr string, from any, hadFrom bool, to any, hasTo bool) {
	f, t := json.RawMessage("null"), json.RawMessage("null")
	if hadFrom {
		f = mustJSON(from)
	}
	if hasTo {
		t = mustJSON(to)
	}
	if !sameJSON(f, t) {
		r.changes = append(r.changes, FieldChange{Path: ptr, Before: f, After: t})
	}
}

func union(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}
