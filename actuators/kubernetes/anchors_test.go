package kubernetes

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stormctl/stormctl/lever"
)

// How readSaved resolves a saved pointer into a list after another writer
// changed the list: kept at its index, moved to the element's new index,
// or dropped and reported when the element is gone or ambiguous.
func TestResolveSavedPointers(t *testing.T) {
	unnamed := `[{"match":"a","retries":{"attempts":3}},{"match":"b","retries":{"attempts":5}}]`
	named := `[{"name":"GET /a","cond":"a","isRetryable":true},{"name":"POST /b","cond":"b","isRetryable":true}]`
	for _, tc := range []struct {
		name, list, held string
		oldFormat        bool // an annotation written before anchors
		edit             func(l []any) []any
		want, lost       string
	}{
		{name: "unchanged", list: unnamed, held: "/spec/http/1/retries",
			edit: func(l []any) []any { return l }, want: "/spec/http/1/retries"},
		{name: "held field changed by another writer", list: unnamed, held: "/spec/http/1/retries",
			edit: func(l []any) []any { l[1].(map[string]any)["retries"] = "x"; return l }, want: "/spec/http/1/retries"},
		{name: "inserted before", list: unnamed, held: "/spec/http/1/retries",
			edit: func(l []any) []any { return slices.Insert(l, 0, any(map[string]any{"match": "new"})) }, want: "/spec/http/2/retries"},
		{name: "removed before", list: unnamed, held: "/spec/http/1/retries",
			edit: func(l []any) []any { return l[1:] }, want: "/spec/http/0/retries"},
		{name: "sibling edited in place", list: unnamed, held: "/spec/http/1/retries",
			edit: func(l []any) []any { l[1].(map[string]any)["timeout"] = "1s"; return l }, want: "/spec/http/1/retries"},
		{name: "removed", list: unnamed, held: "/spec/http/1/retries",
			edit: func(l []any) []any { return l[:1] }, lost: "/spec/http/1"},
		{name: "ambiguous", list: unnamed, held: "/spec/http/1/retries",
			edit: func(l []any) []any {
				return slices.Insert(l, 0, any(map[string]any{"match": "b", "retries": map[string]any{"attempts": 1}}))
			}, lost: "/spec/http/1"},
		{name: "sibling edited and an entry inserted", list: unnamed, held: "/spec/http/1/retries",
			edit: func(l []any) []any {
				l[1].(map[string]any)["timeout"] = "1s"
				return slices.Insert(l, 0, any(map[string]any{"match": "new"}))
			}, lost: "/spec/http/1"},
		{name: "named, inserted before", list: named, held: "/spec/http/0/isRetryable",
			edit: func(l []any) []any { return slices.Insert(l, 0, any(map[string]any{"name": "new"})) }, want: "/spec/http/1/isRetryable"},
		{name: "named, sibling edited and inserted before", list: named, held: "/spec/http/0/isRetryable",
			edit: func(l []any) []any {
				l[0].(map[string]any)["cond"] = "z"
				return slices.Insert(l, 0, any(map[string]any{"name": "new"}))
			}, want: "/spec/http/1/isRetryable"},
		{name: "named, renamed", list: named, held: "/spec/http/0/isRetryable",
			edit: func(l []any) []any { l[0].(map[string]any)["name"] = "GET /z"; return l }, lost: "/spec/http/0"},
		{name: "named, duplicated", list: named, held: "/spec/http/1/isRetryable",
			edit: func(l []any) []any { return append([]any{map[string]any{"name": "POST /b"}}, l...) }, lost: "/spec/http/1"},
		{name: "old annotation stays positional", list: unnamed, held: "/spec/http/1/retries", oldFormat: true,
			edit: func(l []any) []any { return slices.Insert(l, 0, any(map[string]any{"match": "new"})) }, want: "/spec/http/1/retries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := map[string]any{"metadata": map[string]any{}, "spec": map[string]any{}}
			var list []any
			if err := json.Unmarshal([]byte(tc.list), &list); err != nil {
				t.Fatal(err)
			}
			obj["spec"].(map[string]any)["http"] = list
			s := &Saved{ActionID: "A", Before: map[string]json.RawMessage{tc.held: rawAt(obj, tc.held)},
				Set: map[string]json.RawMessage{tc.held: json.RawMessage(`false`)}}
			if err := writeSaved(obj, map[string]*Saved{"m": s}); err != nil {
				t.Fatal(err)
			}
			if tc.oldFormat {
				s.Anchors = nil
				b, _ := json.Marshal(map[string]*Saved{"m": s})
				if strings.Contains(string(b), "anchors") {
					t.Fatal("anchors still written")
				}
				obj["metadata"].(map[string]any)["annotations"].(map[string]any)[SavedAnnotation] = string(b)
			}
			obj["spec"].(map[string]any)["http"] = tc.edit(list)
			saved, err := readSaved(obj)
			if err != nil {
				t.Fatal(err)
			}
			got := saved["m"]
			before, set := strings.Join(slices.Sorted(maps.Keys(got.Before)), " "), strings.Join(slices.Sorted(maps.Keys(got.Set)), " ")
			var lost []string
			for _, l := range got.lost {
				lost = append(lost, l.Path)
			}
			if before != tc.want || set != tc.want || strings.Join(lost, " ") != tc.lost {
				t.Errorf("before %q, set %q, lost %q; want %q, lost %q", before, set, lost, tc.want, tc.lost)
			}
		})
	}
}

// A pass after another writer inserted an Istio route before the one off
// holds keeps holding it (no change, no conflict), and the release restores
// that route only; a removed held route is reported and nothing is changed.
func TestPlanRebasesIstioRoute(t *testing.T) {
	vs := &unstructured.Unstructured{}
	doc := `{"apiVersion":"networking.istio.io/v1","kind":"VirtualService","metadata":{"name":"checkout","namespace":"shop"},
	"spec":{"http":[{"route":[{"destination":{"host":"payments"}}],"retries":{"attempts":5}}]}}`
	if err := json.Unmarshal([]byte(doc), &vs.Object); err != nil {
		t.Fatal(err)
	}
	l := &lever.Lever{Kind: lever.Retries, Target: "checkout->payments", Value: "off", ActionID: "A"}
	pass := func(obj map[string]any, claims bool) (objectOutcome, map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: obj}
		var cs []claim
		if claims {
			edits, err := editsFor(l, u)
			if err != nil {
				t.Fatal(err)
			}
			cs = []claim{{lever: l, edits: edits}}
		}
		out, work, err := plan(u, cs)
		if err != nil {
			t.Fatal(err)
		}
		if work == nil {
			work = obj
		}
		return out, work
	}
	_, held := pass(vs.Object, true)
	other := map[string]any{"route": []any{map[string]any{"destination": map[string]any{"host": "ledger"}}}, "retries": map[string]any{"attempts": int64(2)}}
	routes, _ := lookup(held, "/spec/http")
	if err := set(held, "/spec/http", append([]any{other}, routes.([]any)...)); err != nil {
		t.Fatal(err)
	}
	out, again := pass(held, true)
	if len(out.applied) != 0 || len(out.conflicts) != 0 || len(out.restored) != 0 {
		t.Fatalf("the pass after the insert changed %+v, conflicts %+v, restored %+v", out.applied, out.conflicts, out.restored)
	}
	if saved, _ := readSaved(again); strings.Join(slices.Sorted(maps.Keys(saved[lever.Member(l.Kind, l.Target)].Before)), " ") != "/spec/http/1/retries" {
		t.Errorf("saved not rebased: %s", annotation(again))
	}

	_, back := pass(again, false)
	if got, _ := lookup(back, "/spec/http"); string(mustJSON(got)) != `[{"retries":{"attempts":2},"route":[{"destination":{"host":"ledger"}}]},{"retries":{"attempts":5},"route":[{"destination":{"host":"payments"}}]}]` {
		t.Errorf("after release: %s", mustJSON(got))
	}

	if err := set(again, "/spec/http", []any{other}); err != nil {
		t.Fatal(err)
	}
	out, gone := pass(again, false)
	if len(out.conflicts) != 1 || !strings.Contains(out.conflicts[0].detail, "the entry /spec/http/1 the lever held was removed or cannot be told apart; left as it is") {
		t.Errorf("conflicts %+v", out.conflicts)
	}
	if got, _ := lookup(gone, "/spec/http"); string(mustJSON(got)) != string(mustJSON([]any{other})) || annotation(gone) != "" {
		t.Errorf("after a removed route's release: %s, annotation %q", mustJSON(got), annotation(gone))
	}
}
