package kubernetes_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// GAMMA, checkout's routes found by label: a consumer route (parentRef the
// payments Service of another namespace) is capped and restored; a producer
// route (parentRef payments in the actuator's namespace, the route's own) is
// refused, naming it and why, and left as it was, since every caller of
// payments obeys it. With payments named under gatewayAPIService it is
// capped and restored too, and each application is journaled as one or the
// other.
func TestGAMMAConsumerRouteChangedProducerRouteOnlyWhenNamed(t *testing.T) {
	f := newFixture(t)
	billing := f.billing()
	f.service("payments", `{}`) // the producer route's parent
	consumer := consumerRoute(f, "checkout-to-payments", billing)
	producer := checkoutRoute(f, "payments-producer")
	rules := func(u *unstructured.Unstructured) string {
		now := f.get(u)
		return ruleRetry(now, 0) + " " + ruleRetry(now, 1) + " " + ruleRetry(now, 2)
	}
	saved := func(u *unstructured.Unstructured) bool {
		_, ok := f.get(u).GetAnnotations()[kube.SavedAnnotation]
		return ok
	}
	const original = `{"attempts":3,"backoff":"100ms","codes":[503]} null {"attempts":2}`
	const capped2 = `{"attempts":1,"backoff":"100ms","codes":[503]} {"attempts":1} {"attempts":2}`
	if got := rules(consumer) + " | " + rules(producer); got != original+" | "+original {
		t.Fatalf("as created: %s", got)
	}

	plain := f.start(nil, kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {GatewayAPI: true}}}, "c1")
	f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
	eventually(t, "consumer route capped", func() (bool, string) {
		got := rules(consumer)
		return got == capped2, got
	})
	f.failedWith("httproute/payments-producer is a producer route of service/payments (its parentRef is in the route's own namespace, " +
		f.ns + "), so its retry applies to every caller of payments, not only checkout's calls: " +
		"no faithful mapping of checkout->payments cap:2 in Gateway API; name payments under gatewayAPIService to change it for every caller")
	if got := rules(producer); got != original || saved(producer) {
		t.Errorf("the producer route was changed: %s, saved %v", got, saved(producer))
	}
	f.release(lever.Retries, "checkout->payments")
	eventually(t, "consumer route restored", func() (bool, string) {
		got := rules(consumer)
		return got == original && !saved(consumer), got
	})
	plain.stop()
	consumerRole := "consumer route of service/payments in " + billing + ": the callers in " + f.ns
	if a := f.entries(journal.ActuationApplied); len(a) != 1 || a[0].Object != "httproute/checkout-to-payments in "+f.ns || a[0].Outcome != consumerRole {
		t.Errorf("applied without gatewayAPIService: %s", js(a))
	}

	failed := len(f.entries(journal.ActuationFailed))
	f.start(nil, kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {GatewayAPI: true, GatewayAPIService: []string{"payments"}}}}, "c2")
	l := f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
	eventually(t, "both routes capped", func() (bool, string) {
		got := rules(consumer) + " | " + rules(producer)
		return got == capped2+" | "+capped2, got
	})
	f.appliedAs("applied with gatewayAPIService", l.ActionID, map[string]string{"httproute/checkout-to-payments in " + f.ns: consumerRole,
		"httproute/payments-producer in " + f.ns: "producer route of service/payments: every caller of payments (gatewayAPIService)"})
	f.release(lever.Retries, "checkout->payments")
	eventually(t, "both restored", func() (bool, string) {
		got := rules(consumer) + " | " + rules(producer)
		return got == original+" | "+original && !saved(consumer) && !saved(producer), got
	})
	if n := len(f.entries(journal.ActuationFailed)); n != failed {
		t.Errorf("failures with gatewayAPIService: %s", js(f.entries(journal.ActuationFailed)[failed:]))
	}
}
