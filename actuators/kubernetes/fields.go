package kubernetes

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The actuator edits objects by JSON pointer (RFC 6901) into their
// unstructured form, so one engine serves every kind: a kind only says
// which pointers a lever sets, and to what.

// SavedAnnotation holds, on every object the actuator changed, what it
// changed: the values before (restored on release) and the values it set
// (to tell another writer's edit from its own).
const SavedAnnotation = "stormctl.io/saved"

// Saved is what one lever changed on an object; SavedAnnotation holds a
// JSON object of them by lever member ("autoscaling:checkout"), since
// several levers may edit one object (retries to two dependencies).
type Saved struct {
	ActionID string `json:"action_id"`
	// Before maps each pointer to its value before the first change; a
	// null means the field was absent and is removed again on restore.
	Before map[string]json.RawMessage `json:"before"`
	// Set maps each pointer to the value the actuator wrote.
	Set map[string]json.RawMessage `json:"set"`
	// Anchors identifies, by element pointer, each list element the
	// pointers go through (anchors.go); annotations written before anchors
	// have none and stay positional.
	Anchors map[string]Anchor `json:"anchors,omitempty"`
	// lost are the elements readSaved found removed or ambiguous, whose
	// pointers it dropped: reported once as conflicts.
	lost []lostElement
}

// readSaved decodes the annotation (empty when there is none), with each
// pointer moved to where its anchored list element is in obj now. A
// malformed annotation is an error: nothing is restored from a guess.
func readSaved(obj map[string]any) (map[string]*Saved, error) {
	raw, ok := lookup(obj, "/metadata/annotations/"+escape(SavedAnnotation))
	if !ok {
		return map[string]*Saved{}, nil
	}
	str, isStr := raw.(string)
	if !isStr {
		return nil, fmt.Errorf("annotation %s is not a string", SavedAnnotation)
	}
	saved := map[string]*Saved{}
	if err := json.Unmarshal([]byte(str), &saved); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", SavedAnnotation, err)
	}
	for m, s := range saved {
		if s == nil || s.Before == nil || s.Set == nil {
			return nil, fmt.Errorf("annotation %s: entry %q lacks before or set", SavedAnnotation, m)
		}
		s.lost = rebase(obj, s)
	}
	return saved, nil
}

// writeSaved stores saved in the annotation, removing it (and an emptied
// annotations map) when nothing is saved any more.
func writeSaved(obj map[string]any, saved map[string]*Saved) error {
	ptr := "/metadata/annotations/" + escape(SavedAnnotation)
	if len(saved) == 0 {
		remove(obj, ptr)
		if a, ok := lookup(obj, "/metadata/annotations"); ok {
			if m, _ := a.(map[string]any); len(m) == 0 {
				remove(obj, "/metadata/annotations")
			}
		}
		return nil
	}
	anchorAll(obj, saved)
	b, err := json.Marshal(saved)
	if err != nil {
		return err
	}
	return set(obj, ptr, string(b))
}

// escape escapes one pointer token.
func escape(tok string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}

// splitPointer parses an RFC 6901 pointer into its tokens.
func splitPointer(ptr string) ([]string, error) {
	if ptr == "" {
		return nil, nil
	}
	if ptr[0] != '/' {
		return nil, fmt.Errorf("JSON pointer %q does not start with /", ptr)
	}
	toks := strings.Split(ptr[1:], "/")
	for i, t := range toks {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(t, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("JSON pointer %q: bad escape in %q", ptr, t)
		}
		toks[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(t)
	}
	return toks, nil
}

// lookup returns the value at ptr and whether it is present.
func lookup(obj map[string]any, ptr string) (any, bool) {
	toks, err := splitPointer(ptr)
	if err != nil {
		return nil, false
	}
	var cur any = obj
	for _, t := range toks {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// set writes v at ptr, creating missing objects on the way; array elements
// must exist.
func set(obj map[string]any, ptr string, v any) error {
	toks, err := splitPointer(ptr)
	if err != nil || len(toks) == 0 {
		return fmt.Errorf("cannot set %q: %v", ptr, err)
	}
	var cur any = obj
	for i, t := range toks {
		last := i == len(toks)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[t] = v
				return nil
			}
			next, ok := c[t]
			if !ok || next == nil {
				next = map[string]any{}
				c[t] = next
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(t)
			if err != nil || n < 0 || n >= len(c) {
				return fmt.Errorf("cannot set %q: no element %q", ptr, t)
			}
			if last {
				c[n] = v
				return nil
			}
			cur = c[n]
		default:
			return fmt.Errorf("cannot set %q: %q is not an object or array", ptr, strings.Join(toks[:i], "/"))
		}
	}
	return nil
}

// remove deletes the member at ptr, if present. Removing from an array is
// not supported: the actuator only removes object members.
func remove(obj map[string]any, ptr string) {
	toks, err := splitPointer(ptr)
	if err != nil || len(toks) == 0 {
		return
	}
	parent, ok := lookup(obj, joinPointer(toks[:len(toks)-1]))
	if !ok {
		return
	}
	if m, isMap := parent.(map[string]any); isMap {
		delete(m, toks[len(toks)-1])
	}
}

func joinPointer(toks []string) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteByte('/')
		b.WriteString(escape(t))
	}
	return b.String()
}

// rawAt returns the JSON of the value at ptr, or "null" when absent.
func rawAt(obj map[string]any, ptr string) json.RawMessage {
	v, ok := lookup(obj, ptr)
	if !ok {
		return json.RawMessage("null")
	}
	return mustJSON(v)
}

// mustJSON marshals a value decoded from JSON, which cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// sameJSON compares two JSON texts by value (key order and number
// spelling aside).
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return string(mustJSON(x)) == string(mustJSON(y))
}
