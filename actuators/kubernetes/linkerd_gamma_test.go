package kubernetes_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// Linkerd reads GAMMA routes as Gateway API does. checkout's consumer route
// (a policy.linkerd.io HTTPRoute whose parent is payments in billing) is
// capped and restored exactly; off there is refused (without annotations it
// would take billing's Service's, which the actuator cannot read). checkout's
// producer route (a Gateway API HTTPRoute whose parent is payments in the
// route's own namespace, no annotations of its own) is refused, naming it and
// why, and with off the Service's retries keep it refused as before. With
// payments named under linkerdService the producer route gets the Service's
// annotations copied with limit 1, the Service its limit, and payments'
// own producer route (labelled for payments, found by its parent) its
// limit; each application is journaled with whose calls it carries, and
// everything is restored exactly.
func TestLinkerdConsumerRouteChangedProducerRouteOnlyWhenNamed(t *testing.T) {
	f := newFixture(t)
	billing := f.billing()
	pay := f.service("payments", `{"retry.linkerd.io/http":"5xx","retry.linkerd.io/limit":"3","retry.linkerd.io/timeout":"300ms"}`)
	consumer := f.object(`{"apiVersion":"policy.linkerd.io/v1beta3","kind":"HTTPRoute","metadata":{"name":"checkout-to-payments",
	"labels":{"app":"checkout"},"annotations":{"retry.linkerd.io/http":"gateway-error","retry.linkerd.io/limit":"3"}},
	"spec":{"parentRefs":[{"group":"core","kind":"Service","name":"payments","namespace":"` + billing + `","port":8080}],
	"rules":[{"backendRefs":[{"name":"payments","namespace":"` + billing + `","port":8080}]}]}}`)
	producer := f.object(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"payments-producer","labels":{"app":"checkout"}},
	"spec":{"parentRefs":[{"group":"","kind":"Service","name":"payments","port":8080}],"rules":[{"backendRefs":[{"name":"payments","port":8080}]}]}}`)
	own := f.object(`{"apiVersion":"policy.linkerd.io/v1beta3","kind":"HTTPRoute","metadata":{"name":"payments-refunds","labels":{"app":"payments"},
	"annotations":{"retry.linkerd.io/http":"5xx","retry.linkerd.io/limit":"2"}},
	"spec":{"parentRefs":[{"group":"core","kind":"Service","name":"payments","port":8080}],"rules":[{"backendRefs":[{"name":"payments","port":8080}]}]}}`)
	all := []*unstructured.Unstructured{consumer, producer, own, pay}
	state := func() string {
		var s string
		for i, u := range all {
			now := f.get(u)
			if i > 0 {
				s += " | "
			}
			s += retryAnns(now)
			if saved(now) {
				s += " (saved)"
			}
		}
		return s
	}
	want := func(what, s string) {
		t.Helper()
		eventually(t, what, func() (bool, string) { got := state(); return got == s, got })
	}
	const original = "http=gateway-error limit=3 |  | http=5xx limit=2 | http=5xx limit=3 timeout=300ms"
	if got := state(); got != original {
		t.Fatalf("as created: %s", got)
	}
	consumerRole := "consumer route of service/payments in " + billing + ": the callers in " + f.ns

	plain := f.start(nil, kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {Linkerd: true}}}, "lc1")
	capped := f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
	want("consumer route capped", "http=gateway-error limit=1 (saved) |  | http=5xx limit=2 | http=5xx limit=3 timeout=300ms")
	f.failedWith("httproute/payments-producer is a producer route of service/payments (its parentRef is in the route's own namespace, " +
		f.ns + "), so its retry annotations apply to every caller of payments, not only checkout's calls: " +
		"no faithful mapping of checkout->payments cap:2 in Linkerd; name payments under linkerdService to change it for every caller")
	f.apply(lever.Retries, "checkout->payments", lever.ValueOff, 10*time.Minute)
	f.failedWith(`no "no retries" in Linkerd for httproute.policy.linkerd.io/checkout-to-payments, a consumer route of service/payments in ` +
		billing + ": without annotations of its own it takes that Service's, which the actuator cannot read from " + f.ns +
		", and limit 0 means 1: no faithful mapping of checkout->payments off")
	f.failedWith(`no "no retries" in Linkerd for a route whose Service retries: without annotations httproute/payments-producer`)
	f.release(lever.Retries, "checkout->payments")
	f.release(lever.Retries, "checkout->payments")
	want("restored without linkerdService", original)
	plain.stop()
	var applied []string
	for _, e := range f.entries(journal.ActuationApplied) {
		applied = append(applied, e.Object+": "+e.Outcome)
	}
	if js(applied) != js([]string{"httproute.policy.linkerd.io/checkout-to-payments in " + f.ns + ": " + consumerRole}) {
		t.Errorf("applied without linkerdService (cap:2 %s): %s", capped.ActionID, js(applied))
	}

	failed := len(f.entries(journal.ActuationFailed))
	f.start(nil, kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {Linkerd: true, LinkerdService: []string{"payments"}}}}, "lc2")
	l := f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
	want("every route and the Service capped",
		"http=gateway-error limit=1 (saved) | http=5xx limit=1 timeout=300ms (saved) | http=5xx limit=1 (saved) | http=5xx limit=1 timeout=300ms (saved)")
	producerRole := "producer route of service/payments: every caller of payments (linkerdService)"
	f.appliedAs("applied with linkerdService", l.ActionID, map[string]string{
		"httproute.policy.linkerd.io/checkout-to-payments in " + f.ns: consumerRole,
		"httproute/payments-producer in " + f.ns:                      producerRole,
		"httproute.policy.linkerd.io/payments-refunds in " + f.ns:     producerRole,
		"service/payments in " + f.ns:                                 "",
	})
	f.release(lever.Retries, "checkout->payments")
	want("restored with linkerdService", original)
	if n := len(f.entries(journal.ActuationFailed)); n != failed {
		t.Errorf("failures with linkerdService: %s", js(f.entries(journal.ActuationFailed)[failed:]))
	}
}
