package kubernetes

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stormctl/stormctl/lever"
)

func decode(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func editString(edits []edit) string {
	var parts []string
	for _, e := range edits {
		for ptr, v := range e.set {
			parts = append(parts, strings.TrimPrefix(ptr, "/metadata/annotations/retry.linkerd.io~1")+"="+string(mustJSON(v)))
		}
	}
	return strings.Join(parts, " ")
}

// A Linkerd Service's edits are computed from its annotations before
// stormctl: after an off removed them, a superseding cap:2 sets the limit
// again (and the plan puts back what the off removed), so a lever's edits
// are the same on every pass.
func TestLinkerdEditsFromOriginals(t *testing.T) {
	svc := decode(t, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"payments","namespace":"shop",
	"annotations":{"retry.linkerd.io/http":"5xx","retry.linkerd.io/limit":"3","team":"pay"}}}`)
	off := &lever.Lever{Kind: lever.Retries, Target: "checkout->payments", Value: "off", ActionID: "OFF"}
	capped := &lever.Lever{Kind: lever.Retries, Target: "checkout->payments", Value: "cap:2", ActionID: "CAP"}
	if got := editString(linkerdServiceEdits(svc, 0)); got != "http=null limit=null" {
		t.Fatalf("off: %s", got)
	}
	_, work, err := plan(svc, []claim{{lever: off, edits: linkerdServiceEdits(svc, 0)}})
	if err != nil || work == nil {
		t.Fatalf("off plan: %v", err)
	}
	offObj := &unstructured.Unstructured{Object: work}
	if a := offObj.GetAnnotations(); a["retry.linkerd.io/http"] != "" || a["team"] != "pay" {
		t.Fatalf("after off: %v", a)
	}
	edits := linkerdServiceEdits(offObj, 1)
	if got := editString(edits); got != `limit="1"` {
		t.Fatalf("cap:2 after off: %s", got)
	}
	_, work, err = plan(offObj, []claim{{lever: capped, edits: edits}})
	if err != nil || work == nil {
		t.Fatalf("cap plan: %v", err)
	}
	a := (&unstructured.Unstructured{Object: work}).GetAnnotations()
	if a["retry.linkerd.io/http"] != "5xx" || a["retry.linkerd.io/limit"] != "1" {
		t.Errorf("cap:2 superseding off: %v", a)
	}
}

// Where a Service's ServiceProfile applies: off sets isRetryable false only
// where it is true; a cap is refused.
func TestProfileEdits(t *testing.T) {
	sp := decode(t, `{"apiVersion":"linkerd.io/v1alpha2","kind":"ServiceProfile","metadata":{"name":"payments.shop.svc.cluster.local"},
	"spec":{"routes":[{"name":"a","isRetryable":true},{"name":"b"},{"name":"c","isRetryable":false}]}}`)
	edits, err := profileEdits(sp, 0, &lever.Lever{Target: "checkout", Value: "off"})
	if err != nil || len(edits) != 1 || edits[0].save != "/spec/routes/0/isRetryable" {
		t.Errorf("off: %+v %v", edits, err)
	}
	if _, err := profileEdits(sp, 2, &lever.Lever{Target: "checkout", Value: "cap:3"}); err == nil || !strings.Contains(err.Error(), "no faithful mapping") {
		t.Errorf("cap:3: %v", err)
	}
}
