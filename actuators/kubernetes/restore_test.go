package kubernetes

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stormctl/stormctl/lever"
)

// freezeThenServer freezes an HPA and then plays the API server's part:
// behavior.scaleUp/scaleDown the freeze created are defaulted, as
// autoscaling/v2 does, and the defaults are owned by stormctl.
func freezeThenServer(t *testing.T, behavior string) *unstructured.Unstructured {
	t.Helper()
	orig := hpaObject(t, behavior)
	_, work, err := plan(orig, freezeClaims(t, orig))
	if err != nil || work == nil {
		t.Fatalf("freeze: %v", err)
	}
	defaults := map[string]any{
		"/spec/behavior/scaleUp/stabilizationWindowSeconds":   int64(0),
		"/spec/behavior/scaleUp/policies":                     []any{map[string]any{"type": "Pods", "value": int64(4), "periodSeconds": int64(15)}},
		"/spec/behavior/scaleDown/stabilizationWindowSeconds": int64(300),
		"/spec/behavior/scaleDown/policies":                   []any{map[string]any{"type": "Percent", "value": int64(100), "periodSeconds": int64(15)}},
	}
	for ptr, v := range defaults {
		if _, ok := lookup(work, ptr); !ok {
			if err := set(work, ptr, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	return &unstructured.Unstructured{Object: work}
}

// editAs sets ptr as another field manager would, recording it in
// managedFields.
func editAs(t *testing.T, obj *unstructured.Unstructured, manager, ptr string, v any, fieldsV1 string) {
	t.Helper()
	if err := set(obj.Object, ptr, v); err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(fieldsV1), &fields); err != nil {
		t.Fatal(err)
	}
	mf, _ := lookup(obj.Object, "/metadata/managedFields")
	list, _ := mf.([]any)
	list = append(list, map[string]any{"manager": manager, "operation": "Update", "fieldsV1": fields, "time": "2026-12-02T09:00:00Z"})
	if err := set(obj.Object, "/metadata/managedFields", list); err != nil {
		t.Fatal(err)
	}
}

func behaviorOf(obj map[string]any) string {
	b, ok := lookup(obj, "/spec/behavior")
	if !ok {
		return "absent"
	}
	return string(mustJSON(b))
}

// Release puts back each field the freeze changed and nobody else did: a
// sibling another writer edited during the freeze stays, a field the freeze
// set that another writer changed stays and is reported, defaults the
// freeze caused go, and everything else comes back as it was.
func TestPlanRestoreFieldByField(t *testing.T) {
	scaleUp := `,"behavior":{"scaleUp":{"stabilizationWindowSeconds":0,"selectPolicy":"Max","policies":[{"type":"Pods","value":4,"periodSeconds":15}]}}`
	for _, tc := range []struct {
		name, behavior, manager, ptr string
		value                        any
		fields                       string
		want                         string
		conflicts                    int
	}{
		{"sibling of an absent behavior", "", "kubectl-edit", "/spec/behavior/scaleUp/stabilizationWindowSeconds", int64(60),
			`{"f:spec":{"f:behavior":{"f:scaleUp":{"f:stabilizationWindowSeconds":{}}}}}`,
			`{"scaleUp":{"stabilizationWindowSeconds":60}}`, 0},
		{"set field of an absent behavior", "", "kubectl-edit", "/spec/behavior/scaleDown/selectPolicy", "Min",
			`{"f:spec":{"f:behavior":{"f:scaleDown":{"f:selectPolicy":{}}}}}`,
			`{"scaleDown":{"selectPolicy":"Min"}}`, 1},
		{"sibling of a set behavior", scaleUp, "kubectl-edit", "/spec/behavior/scaleUp/stabilizationWindowSeconds", int64(60),
			`{"f:spec":{"f:behavior":{"f:scaleUp":{"f:stabilizationWindowSeconds":{}}}}}`,
			`{"scaleUp":{"policies":[{"periodSeconds":15,"type":"Pods","value":4}],"selectPolicy":"Max","stabilizationWindowSeconds":60}}`, 0},
		{"a field added by another writer", "", "hpa-tuner", "/spec/behavior/scaleDown/tolerance", "0.05",
			`{"f:spec":{"f:behavior":{"f:scaleDown":{"f:tolerance":{}}}}}`,
			`{"scaleDown":{"tolerance":"0.05"}}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := freezeThenServer(t, tc.behavior)
			editAs(t, obj, tc.manager, tc.ptr, tc.value, tc.fields)
			out, back, err := plan(obj, nil)
			if err != nil || back == nil {
				t.Fatalf("release plan: %+v %v", out, err)
			}
			if got := behaviorOf(back); !sameJSON(json.RawMessage(got), json.RawMessage(tc.want)) {
				t.Errorf("behavior after release %s, want %s", got, tc.want)
			}
			if len(out.conflicts) != tc.conflicts {
				t.Errorf("conflicts %+v, want %d", out.conflicts, tc.conflicts)
			}
			if len(out.restored) != 1 || len(out.restored[0].changes) == 0 {
				t.Errorf("restored %+v: want the changes put back", out.restored)
			}
			if _, ok := lookup(back, "/metadata/annotations/"+escape(SavedAnnotation)); ok {
				t.Error("release kept the saved annotation")
			}
		})
	}
}

// An Istio route's retries: another writer's retryOn survives the release,
// attempts comes back.
func TestPlanRestoreIstioSibling(t *testing.T) {
	vs := &unstructured.Unstructured{}
	doc := `{"apiVersion":"networking.istio.io/v1","kind":"VirtualService","metadata":{"name":"checkout","namespace":"shop"},
	"spec":{"http":[{"route":[{"destination":{"host":"payments"}}],"retries":{"attempts":5,"retryOn":"5xx"}}]}}`
	if err := json.Unmarshal([]byte(doc), &vs.Object); err != nil {
		t.Fatal(err)
	}
	l := &lever.Lever{Kind: lever.Retries, Target: "checkout->payments", Value: "off", ActionID: "A"}
	edits, err := editsFor(l, vs)
	if err != nil {
		t.Fatal(err)
	}
	_, work, err := plan(vs, []claim{{lever: l, edits: edits}})
	if err != nil || work == nil {
		t.Fatalf("hold: %v", err)
	}
	if err := set(work, "/spec/http/0/retries/retryOn", "reset"); err != nil {
		t.Fatal(err)
	}
	_, back, err := plan(&unstructured.Unstructured{Object: work}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := lookup(back, "/spec/http/0/retries")
	if want := `{"attempts":5,"retryOn":"reset"}`; !sameJSON(mustJSON(got), json.RawMessage(want)) {
		t.Errorf("retries after release %s, want %s", mustJSON(got), want)
	}
}
