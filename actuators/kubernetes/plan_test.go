package kubernetes

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stormctl/stormctl/lever"
)

func hpaObject(t *testing.T, behavior string) *unstructured.Unstructured {
	t.Helper()
	doc := `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler",
	"metadata":{"name":"checkout","namespace":"shop","resourceVersion":"7"},
	"spec":{"minReplicas":24,"maxReplicas":80,"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"checkout"}` + behavior + `}}`
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

var frozen = &lever.Lever{Kind: lever.Autoscaling, Target: "checkout", Value: lever.ValueFrozen, ActionID: "01ACT"}

func freezeClaims(t *testing.T, obj *unstructured.Unstructured) []claim {
	edits, err := editsFor(frozen, obj)
	if err != nil || len(edits) != 1 {
		t.Fatalf("editsFor: %v %v", edits, err)
	}
	return []claim{{lever: frozen, edits: edits}}
}

// Freezing then releasing gives back exactly the original object, whether
// spec.behavior was absent or set; a second plan of a converged object
// writes nothing.
func TestPlanFreezeRestoreRoundTrip(t *testing.T) {
	for name, behavior := range map[string]string{
		"absent":  ``,
		"present": `,"behavior":{"scaleUp":{"stabilizationWindowSeconds":0,"selectPolicy":"Max","policies":[{"type":"Pods","value":4,"periodSeconds":15}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			orig := hpaObject(t, behavior)
			out, work, err := plan(orig, freezeClaims(t, orig))
			if err != nil || work == nil || len(out.applied) != 1 {
				t.Fatalf("freeze plan: %+v %v %v", out, work, err)
			}
			for _, p := range []string{"/spec/behavior/scaleUp/selectPolicy", "/spec/behavior/scaleDown/selectPolicy"} {
				if v, _ := lookup(work, p); v != disabled {
					t.Errorf("%s = %v, want Disabled", p, v)
				}
			}
			frozenObj := &unstructured.Unstructured{Object: work}
			if _, again, _ := plan(frozenObj, freezeClaims(t, frozenObj)); again != nil {
				t.Errorf("second freeze plan writes again: %v", again)
			}
			out, back, err := plan(frozenObj, nil)
			if err != nil || back == nil || len(out.restored) != 1 {
				t.Fatalf("restore plan: %+v %v", out, err)
			}
			if !sameJSON(mustJSON(back), mustJSON(orig.Object)) {
				t.Errorf("restored\n%s\nwant\n%s", mustJSON(back), mustJSON(orig.Object))
			}
		})
	}
}

// A field another writer changed while the lever holds is reported, not
// set back; on release that field is left as the writer left it and the
// rest of the freeze is undone.
func TestPlanConflictIsReportedNotFought(t *testing.T) {
	orig := hpaObject(t, "")
	_, work, _ := plan(orig, freezeClaims(t, orig))
	if err := set(work, "/spec/behavior/scaleUp/selectPolicy", "Max"); err != nil {
		t.Fatal(err)
	}
	edited := &unstructured.Unstructured{Object: work}
	out, again, err := plan(edited, freezeClaims(t, edited))
	if err != nil || again != nil || len(out.conflicts) != 1 {
		t.Fatalf("plan after an edit: out %+v, writes %v, err %v", out, again, err)
	}
	out, back, err := plan(edited, nil)
	if err != nil || len(out.conflicts) != 1 {
		t.Fatalf("restore after an edit: %+v %v", out, err)
	}
	if v, _ := lookup(back, "/spec/behavior/scaleUp/selectPolicy"); v != "Max" {
		t.Errorf("release overwrote the other writer's value: %v", v)
	}
	if v, ok := lookup(back, "/spec/behavior/scaleDown"); ok {
		t.Errorf("release left scaleDown as the freeze set it: %v", v)
	}
	if _, ok := lookup(back, "/metadata/annotations/"+escape(SavedAnnotation)); ok {
		t.Error("release kept the saved annotation")
	}
}

// Istio counts retries, not attempts.
func TestIstioAttempts(t *testing.T) {
	for v, want := range map[string]int64{"off": 0, "cap:1": 0, "cap:3": 2} {
		if got, err := istioAttempts(v); err != nil || got != want {
			t.Errorf("istioAttempts(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	if _, err := istioAttempts("cap:x"); err == nil {
		t.Error("cap:x accepted")
	}
}

func TestHostIs(t *testing.T) {
	for host, want := range map[string]bool{
		"payments": true, "payments.shop": true, "payments.shop.svc.cluster.local": true,
		"payments.other.svc.cluster.local": false, "payments-v2": false, "ledger": false,
	} {
		if got := hostIs(host, "payments", "shop"); got != want {
			t.Errorf("hostIs(%q) = %v, want %v", host, got, want)
		}
	}
}

// A malformed saved annotation (hostile or hand-edited) is an error, never
// a panic or a guessed restore.
func FuzzReadSaved(f *testing.F) {
	f.Add(`{"autoscaling:checkout":{"action_id":"a","before":{"/spec/behavior":null},"set":{}}}`)
	f.Add(`{"x":null}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, ann string) {
		obj := map[string]any{"metadata": map[string]any{"annotations": map[string]any{SavedAnnotation: ann}}}
		saved, err := readSaved(obj)
		if err != nil {
			return
		}
		for m := range saved {
			if _, _, err := restore(obj, saved, m); err != nil {
				return
			}
		}
	})
}

func FuzzPointer(f *testing.F) {
	f.Add("/spec/http/0/retries")
	f.Add("/a~1b/~0c")
	f.Add("x")
	f.Fuzz(func(t *testing.T, ptr string) {
		obj := map[string]any{"spec": map[string]any{"http": []any{map[string]any{}}}}
		if err := set(obj, ptr, "v"); err == nil {
			if v, ok := lookup(obj, ptr); !ok || v != "v" {
				t.Fatalf("set %q then lookup = %v, %v", ptr, v, ok)
			}
		}
		remove(obj, ptr)
	})
}

// An edge lever and a service-wide lever share a VirtualService: the edge
// takes its dependency's route, the service-wide lever the others; when the
// edge is released its route passes to the service-wide lever, and releasing
// that too gives back the original object exactly.
func TestPlanEdgeAndServiceLeversShareRoutes(t *testing.T) {
	vs := &unstructured.Unstructured{}
	doc := `{"apiVersion":"networking.istio.io/v1","kind":"VirtualService","metadata":{"name":"checkout","namespace":"shop","labels":{"app":"checkout"}},
	"spec":{"http":[{"route":[{"destination":{"host":"payments"}}],"retries":{"attempts":5,"retryOn":"5xx"}},{"route":[{"destination":{"host":"ledger"}}]}]}}`
	if err := json.Unmarshal([]byte(doc), &vs.Object); err != nil {
		t.Fatal(err)
	}
	orig := vs.DeepCopy()
	m := Mapping{Namespace: "shop", Services: map[string]ServiceObjects{"checkout": {Istio: true}}}
	served := availability{VirtualServiceKind: availServed}
	edge := lever.Lever{Kind: lever.Retries, Target: "checkout->payments", Value: "off", ActionID: "E"}
	wide := lever.Lever{Kind: lever.Retries, Target: "checkout", Value: "cap:3", ActionID: "W"}
	step := func(levers ...lever.Lever) {
		t.Helper()
		claims, _, failures := m.claims(levers, objects{VirtualServiceKind: {vs}}, served)
		if len(failures) > 0 {
			t.Fatalf("failures: %+v", failures)
		}
		_, work, err := plan(vs, claims[objectKey(vs)])
		if err != nil {
			t.Fatal(err)
		}
		if work != nil {
			vs = &unstructured.Unstructured{Object: work}
		}
	}
	attempts := func(i int) any {
		v, _ := lookup(vs.Object, "/spec/http/"+string(rune('0'+i))+"/retries/attempts")
		return v
	}
	// The edge arrives while the service-wide lever holds every route, and
	// leaves first.
	step(wide)
	if a0, a1 := attempts(0), attempts(1); a0 != int64(2) || a1 != int64(2) {
		t.Fatalf("service-wide: attempts %v, %v; want 2, 2", a0, a1)
	}
	step(edge, wide)
	if a0, a1 := attempts(0), attempts(1); a0 != int64(0) || a1 != int64(2) {
		t.Fatalf("both levers: attempts %v, %v; want 0, 2", a0, a1)
	}
	step(wide)
	if a0 := attempts(0); a0 != int64(2) {
		t.Fatalf("edge released: payments route attempts %v, want the service-wide 2", a0)
	}
	step()
	if !sameJSON(mustJSON(vs.Object), mustJSON(orig.Object)) {
		t.Errorf("all released:\n%s\nwant\n%s", mustJSON(vs.Object), mustJSON(orig.Object))
	}
	// Both at once, then the service-wide lever leaves first: the edge
	// keeps its route, and releasing it gives back the original.
	step(edge, wide)
	step(edge)
	if a0, a1 := attempts(0), attempts(1); a0 != int64(0) || a1 != nil {
		t.Fatalf("service-wide released: attempts %v, %v; want 0, absent", a0, a1)
	}
	step()
	if !sameJSON(mustJSON(vs.Object), mustJSON(orig.Object)) {
		t.Errorf("all released again:\n%s\nwant\n%s", mustJSON(vs.Object), mustJSON(orig.Object))
	}
}
