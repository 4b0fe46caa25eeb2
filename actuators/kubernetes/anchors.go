package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Saved pointers are positional: /spec/rules/2/retry names the third rule.
// Another writer inserting or removing a rule before it while the lever
// holds would make the pointer name a different rule, so each list element
// a saved pointer goes through carries an anchor that tells it apart, and
// readSaved moves the pointers to where their elements are now.

// Anchor identifies the list element at one index of a saved pointer.
type Anchor struct {
	// Name is the element's name field, when it has one (ServiceProfile
	// routes; Gateway API rules and Istio http routes optionally).
	Name string `json:"name,omitempty"`
	// Sum is, for an element without a name, the sha256 of its canonical
	// JSON with the lever's own saved subtrees removed (they are the
	// lever's and another writer's to change).
	Sum string `json:"sha256,omitempty"`
	// Len is the list's length when anchored: an unnamed element edited
	// in place (a sibling field changed) in a list of the same length is
	// still taken to be at its index, as before anchors.
	Len int `json:"len"`
}

// lostElement is a list element a lever held that another writer removed
// or made impossible to tell apart from another.
type lostElement struct {
	Path string // the element's pointer when saved
}

// anchorAll records, for every member, the anchors of the elements its
// saved pointers go through in work, the object about to be written.
func anchorAll(work map[string]any, saved map[string]*Saved) {
	for _, s := range saved {
		s.Anchors = nil
		for _, ptr := range slices.Sorted(maps.Keys(s.Before)) {
			toks, err := splitPointer(ptr)
			if err != nil {
				continue
			}
			for i := range toks {
				elem := joinPointer(toks[:i+1])
				list, isList := lookupList(work, toks[:i])
				n, err := strconv.Atoi(toks[i])
				if !isList || err != nil || n < 0 || n >= len(list) {
					continue
				}
				if _, done := s.Anchors[elem]; done {
					continue
				}
				if s.Anchors == nil {
					s.Anchors = map[string]Anchor{}
				}
				s.Anchors[elem] = anchorOf(list[n], elem, s, len(list))
			}
		}
	}
}

// anchorOf is element v's anchor; elem is its pointer, under which s's saved
// subtrees are left out of the fingerprint.
func anchorOf(v any, elem string, s *Saved, n int) Anchor {
	m, _ := v.(map[string]any)
	if name, ok := m["name"].(string); ok && name != "" {
		return Anchor{Name: name, Len: n}
	}
	if m != nil {
		for ptr := range s.Before {
			rel, ok := strings.CutPrefix(ptr, elem+"/")
			if !ok {
				continue
			}
			if toks, err := splitPointer("/" + rel); err == nil && len(toks) > 0 {
				m = withoutPath(m, toks)
			}
		}
		v = m
	}
	sum := sha256.Sum256(mustJSON(v)) // json.Marshal sorts map keys: canonical
	return Anchor{Sum: hex.EncodeToString(sum[:]), Len: n}
}

// withoutPath returns m without the member at toks, copying only the maps
// on the way so the object itself is not changed.
func withoutPath(m map[string]any, toks []string) map[string]any {
	out := maps.Clone(m)
	if len(toks) == 1 {
		delete(out, toks[0])
		return out
	}
	if sub, ok := m[toks[0]].(map[string]any); ok {
		out[toks[0]] = withoutPath(sub, toks[1:])
	}
	return out
}

// matches says whether element v, at pointer elem, is the one a anchors.
func (a Anchor) matches(v any, elem string, s *Saved) bool {
	if a.Name != "" {
		m, _ := v.(map[string]any)
		return m["name"] == a.Name
	}
	return anchorOf(v, elem, s, 0).Sum == a.Sum
}

// rebase moves s's pointers to where the anchored elements are in obj now.
// Pointers into an element that was removed, or that matches more than one
// element, are dropped (nothing is restored there) and the element is
// returned. Pointers without anchors (annotations written before anchors)
// stay positional.
func rebase(obj map[string]any, s *Saved) []lostElement {
	if len(s.Anchors) == 0 {
		return nil
	}
	moved := map[string]string{} // old element pointer -> new, "" lost
	var lost []lostElement
	resolve := func(ptr string) (string, bool) {
		toks, err := splitPointer(ptr)
		if err != nil {
			return ptr, true
		}
		out := slices.Clone(toks)
		for i := range toks {
			elem := joinPointer(toks[:i+1])
			a, anchored := s.Anchors[elem]
			if !anchored {
				continue
			}
			to, seen := moved[elem]
			if !seen {
				to = s.locate(obj, out[:i], toks[i], elem, a)
				moved[elem] = to
				if to == "" {
					lost = append(lost, lostElement{Path: elem})
				}
			}
			if to == "" {
				return "", false
			}
			out[i] = to
		}
		return joinPointer(out), true
	}
	// Both maps are rekeyed before either is replaced: matching an
	// element leaves out the saved subtrees by their old pointers.
	before, set := rekey(s.Before, resolve), rekey(s.Set, resolve)
	s.Before, s.Set = before, set
	slices.SortFunc(lost, func(a, b lostElement) int { return strings.Compare(a.Path, b.Path) })
	return lost
}

// locate is the index, in the list at parent (already rebased), of the
// element anchor a names (saved at index idx, pointer elem), or "" when
// it is gone or cannot be told apart.
func (s *Saved) locate(obj map[string]any, parent []string, idx, elem string, a Anchor) string {
	list, ok := lookupList(obj, parent)
	if !ok {
		return ""
	}
	n, _ := strconv.Atoi(idx)
	if n >= 0 && n < len(list) && a.matches(list[n], elem, s) {
		return idx
	}
	var found []int
	for i, v := range list {
		if a.matches(v, elem, s) {
			found = append(found, i)
		}
	}
	switch {
	case len(found) == 1:
		return strconv.Itoa(found[0])
	case len(found) == 0 && a.Name == "" && len(list) == a.Len && n >= 0 && n < len(list):
		return idx // edited in place: positional, as before anchors
	}
	return ""
}

func rekey[V any](m map[string]V, resolve func(string) (string, bool)) map[string]V {
	out := make(map[string]V, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if to, ok := resolve(k); ok {
			out[to] = m[k]
		}
	}
	return out
}

// lookupList returns the list at toks in obj.
func lookupList(obj map[string]any, toks []string) ([]any, bool) {
	v, ok := lookup(obj, joinPointer(toks))
	l, isList := v.([]any)
	return l, ok && isList
}

// describeLost says which held list entries another writer removed or made
// ambiguous: nothing is restored into them, as the lever cannot tell which
// entry its saved values belong to.
func describeLost(s *Saved, lost []lostElement) string {
	parts := make([]string, len(lost))
	for i, l := range lost {
		what := l.Path
		if name := s.Anchors[l.Path].Name; name != "" {
			what = fmt.Sprintf("%s (%q)", l.Path, name)
		}
		parts[i] = "the entry " + what + " the lever held was removed or cannot be told apart; left as it is"
	}
	return strings.Join(parts, "; ")
}
