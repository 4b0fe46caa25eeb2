package kubernetes

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stormctl/stormctl/lever"
)

// Which rules of an HTTPRoute a retries lever edits, and what it refuses.
func TestHTTPRouteEdits(t *testing.T) {
	route := `{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"r","namespace":"shop"},
	"spec":{"rules":[
	 {"backendRefs":[{"name":"payments"}]},
	 {"backendRefs":[{"name":"payments","namespace":"billing"}]},
	 {"backendRefs":[{"group":"multicluster.x-k8s.io","kind":"ServiceImport","name":"payments"}]},
	 {"backendRefs":[{"group":"core","kind":"Service","name":"payments","namespace":"shop"}]},
	 {"backendRefs":[{"name":"ledger"}]}]}}`
	split := `{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"s","namespace":"shop"},
	"spec":{"rules":[{"backendRefs":[{"name":"payments"},{"name":"ledger","namespace":"books"}]}]}}`
	for _, tc := range []struct {
		doc, target, value string
		want               string // the saved pointers and values set, or the error's start
	}{
		{route, "checkout->payments", "cap:3", "/spec/rules/0/retry=2 /spec/rules/3/retry=2"},
		{route, "checkout->payments", "off", "/spec/rules/0/retry=0 /spec/rules/3/retry=0"},
		{route, "checkout", "cap:1", "/spec/rules/0/retry=0 /spec/rules/1/retry=0 /spec/rules/2/retry=0 /spec/rules/3/retry=0 /spec/rules/4/retry=0"},
		{route, "checkout->inventory", "off", ""},
		{route, "checkout->payments", "cap:0", "error: retries value"},
		{split, "checkout->payments", "off", "error: httproute/s rule 0 sends to payments and to service/ledger in books"},
		{split, "checkout", "off", "/spec/rules/0/retry=0"},
	} {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(tc.doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		edits, err := httpRouteEdits(&lever.Lever{Kind: lever.Retries, Target: tc.target, Value: tc.value}, u)
		var parts []string
		for _, e := range edits {
			parts = append(parts, e.save+"="+string(mustJSON(e.set[e.save+"/attempts"])))
		}
		got := strings.Join(parts, " ")
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, tc.want) || (tc.want == "" && got != "") {
			t.Errorf("%s %s on %s: got %q, want %q", tc.target, tc.value, u.GetName(), got, tc.want)
		}
	}
}
