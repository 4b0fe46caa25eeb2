package kubernetes

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stormctl/stormctl/lever"
)

// gammaRoutes are HTTPRoutes in shop: a consumer route of payments in
// billing, a producer route of payments labelled as checkout's, another not
// labelled, and a producer route of ledger that sends to payments.
var gammaRoutes = []string{
	`{"metadata":{"name":"consumer","labels":{"app":"checkout"}},"spec":{
	 "parentRefs":[{"group":"","kind":"Service","name":"payments","namespace":"billing"}],"rules":[
	 {"backendRefs":[{"name":"payments","namespace":"billing"}],"retry":{"attempts":3}},
	 {"backendRefs":[{"group":"core","kind":"Service","name":"payments","namespace":"billing"}]},
	 {"backendRefs":[{"name":"ledger","namespace":"billing"}]}]}}`,
	`{"metadata":{"name":"producer","labels":{"app":"checkout"}},"spec":{
	 "parentRefs":[{"kind":"Service","name":"payments","namespace":"shop"}],"rules":[{"backendRefs":[{"name":"payments"}]}]}}`,
	`{"metadata":{"name":"payments-own","labels":{"app":"payments"}},"spec":{
	 "parentRefs":[{"group":"core","kind":"Service","name":"payments"}],"rules":[{"backendRefs":[{"name":"payments"}]}]}}`,
	`{"metadata":{"name":"via-ledger","labels":{"app":"checkout"}},"spec":{
	 "parentRefs":[{"kind":"Service","name":"ledger"}],"rules":[{"backendRefs":[{"name":"payments"}]}]}}`,
}

// Consumer routes are changed; a producer route only with its Service named
// under gatewayAPIService, and then found by its parentRef too; a producer
// route of another Service is refused for S->D whatever is named.
func TestGatewayAPITargetsConsumerProducer(t *testing.T) {
	var all []*unstructured.Unstructured
	for _, doc := range gammaRoutes {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetGroupVersionKind(HTTPRouteKind)
		u.SetNamespace("shop")
		all = append(all, u)
	}
	objs := objects{HTTPRouteKind: all}
	served := availability{HTTPRouteKind: availServed}
	for _, tc := range []struct {
		target, value string
		every         []string
		want          []string // per route reached: "name: pointers" or "name! error fragment"; failures "- message start"
	}{
		{"checkout->payments", "off", nil, []string{
			"consumer: /spec/rules/0/retry /spec/rules/1/retry",
			"producer! httproute/producer is a producer route of service/payments (its parentRef is in the route's own namespace, shop), " +
				"so its retry applies to every caller of payments, not only checkout's calls: no faithful mapping of checkout->payments off " +
				"in Gateway API; name payments under gatewayAPIService to change it for every caller",
			"via-ledger! httproute/via-ledger is a producer route of service/ledger",
		}},
		{"checkout->payments", "cap:2", []string{"payments"}, []string{
			"consumer: /spec/rules/0/retry /spec/rules/1/retry",
			"producer: /spec/rules/0/retry",
			"via-ledger! every caller of ledger, not only checkout's calls to payments: no faithful mapping of checkout->payments cap:2 in Gateway API",
			"payments-own: /spec/rules/0/retry",
		}},
		{"checkout", "off", []string{"payments"}, []string{
			"consumer: /spec/rules/0/retry /spec/rules/1/retry /spec/rules/2/retry",
			"producer: /spec/rules/0/retry",
			"via-ledger! name ledger under gatewayAPIService",
			"payments-own: /spec/rules/0/retry",
		}},
		{"checkout->inventory", "off", []string{"inventory"}, []string{
			"consumer: ", "producer: ", "via-ledger: ",
			"- not found: no HTTPRoute in shop has service/inventory as its parentRef (a producer route)",
		}},
	} {
		m := Mapping{Namespace: "shop", Services: map[string]ServiceObjects{"checkout": {GatewayAPI: true, GatewayAPIService: tc.every}}}
		targets, failures := m.gatewayAPITargets(&lever.Lever{Kind: lever.Retries, Target: tc.target, Value: tc.value}, objs, served)
		if got := targetLines(targets, failures); !matchAll(got, tc.want) {
			t.Errorf("%s %s, gatewayAPIService %v:\n got  %q\n want %q", tc.target, tc.value, tc.every, got, tc.want)
		}
	}
}

// targetLines words targets and failures for matchAll: "name: pointers"
// (the edits' saved pointers), "name! error", "- failure".
func targetLines(targets []target, failures []failure) []string {
	var got []string
	for _, tg := range targets {
		if tg.err != nil {
			got = append(got, tg.obj.GetName()+"! "+tg.err.Error())
			continue
		}
		var ptrs []string
		for _, e := range tg.edits {
			ptrs = append(ptrs, e.save)
		}
		got = append(got, tg.obj.GetName()+": "+strings.Join(ptrs, " "))
	}
	for _, f := range failures {
		got = append(got, "- "+f.msg)
	}
	return got
}

// matchAll says whether got has one line matching each of want, and no
// more.
func matchAll(got, want []string) bool {
	return len(got) == len(want) && !slices.ContainsFunc(want, func(w string) bool {
		return !slices.ContainsFunc(got, func(g string) bool { return matches(g, w) })
	})
}

// matches says whether got is what want says: "name! fragment" an error of
// route name containing fragment, "- start" a failure starting so, else
// exactly the route's edits.
func matches(got, want string) bool {
	if name, frag, ok := strings.Cut(want, "! "); ok {
		return strings.HasPrefix(got, name+"! ") && strings.Contains(got, frag)
	}
	return got == want || strings.HasPrefix(want, "- ") && strings.HasPrefix(got, want)
}

// gatewayAPIService alone marks a service as routed by Gateway API, and its
// names are checked like every other.
func TestParseMappingGatewayAPIService(t *testing.T) {
	m, err := ParseMapping("m.yaml", []byte("kubernetes:\n  namespace: shop\n  services:\n    checkout: {gatewayAPIService: [payments]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !m.GatewayRouted("checkout") || m.GatewayRouted("ledger") {
		t.Errorf("routed: %+v", m)
	}
	_, err = ParseMapping("m.yaml", []byte("kubernetes:\n  namespace: shop\n  services:\n    checkout:\n      gatewayAPIService: [ok, Bad_1]\n"))
	if want := `m.yaml:5:31: service "checkout": gatewayAPIService name "Bad_1" is not a DNS subdomain`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
