package kubernetes

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stormctl/stormctl/lever"
)

// linkerdGAMMAObjects are checkout's Linkerd routes in shop (HTTPRoutes
// labelled app=checkout) and the Services they name: a consumer route of
// payments in billing with annotations of its own, one without, a producer
// route of payments without (payments' Service retries), a route of two
// Services, and payments' own producer route (labelled for payments).
func linkerdGAMMAObjects(t *testing.T) objects {
	routes := []string{
		`{"metadata":{"name":"consumer","labels":{"app":"checkout"},"annotations":{"retry.linkerd.io/http":"5xx","retry.linkerd.io/limit":"3"}},
		 "spec":{"parentRefs":[{"group":"core","kind":"Service","name":"payments","namespace":"billing"}]}}`,
		`{"metadata":{"name":"bare-consumer","labels":{"app":"checkout"}},
		 "spec":{"parentRefs":[{"kind":"Service","name":"payments","namespace":"billing"}]}}`,
		`{"metadata":{"name":"producer","labels":{"app":"checkout"}},"spec":{"parentRefs":[{"kind":"Service","name":"payments","namespace":"shop"}]}}`,
		`{"metadata":{"name":"two","labels":{"app":"checkout"},"annotations":{"retry.linkerd.io/limit":"2"}},
		 "spec":{"parentRefs":[{"kind":"Service","name":"payments"},{"kind":"Service","name":"payments","namespace":"billing"}]}}`,
		`{"metadata":{"name":"payments-own","labels":{"app":"payments"},"annotations":{"retry.linkerd.io/limit":"2"}},
		 "spec":{"parentRefs":[{"group":"core","kind":"Service","name":"payments"}]}}`,
	}
	objs := objects{}
	for _, doc := range routes {
		u := decode(t, doc)
		u.SetGroupVersionKind(HTTPRouteKind)
		u.SetNamespace("shop")
		objs[HTTPRouteKind] = append(objs[HTTPRouteKind], u)
	}
	svc := decode(t, `{"metadata":{"name":"payments","namespace":"shop","annotations":{"retry.linkerd.io/http":"5xx","retry.linkerd.io/limit":"3"}}}`)
	svc.SetGroupVersionKind(ServiceKind)
	objs[ServiceKind] = []*unstructured.Unstructured{svc}
	return objs
}

// A consumer route is changed where its own annotations say it all; without
// them, or for off, what it would take from its Service in another namespace
// is unknown, so it is refused. A producer route is refused unless its
// Service is named under linkerdService (and then found by its parent too);
// off on one without annotations whose Service retries is refused as
// before. A callers' ServiceProfile of the consumer route's Service makes
// Linkerd ignore the route.
func TestLinkerdTargetsConsumerProducer(t *testing.T) {
	served := availability{HTTPRouteKind: availServed, ServiceKind: availServed}
	for _, tc := range []struct {
		target, value string
		every         []string
		profile       bool     // a ServiceProfile payments.billing.svc.cluster.local in shop
		want          []string // as in TestGatewayAPITargetsConsumerProducer
	}{
		{"checkout->payments", "cap:2", nil, false, []string{
			"consumer: /metadata/annotations/retry.linkerd.io~1limit",
			"bare-consumer! httproute/bare-consumer has no retry annotations of its own, so it takes those of service/payments in billing, " +
				"which the actuator cannot read from shop: no faithful mapping of checkout->payments cap:2 in Linkerd; " +
				"give the route retry annotations of its own",
			"producer! httproute/producer is a producer route of service/payments (its parentRef is in the route's own namespace, shop), " +
				"so its retry annotations apply to every caller of payments, not only checkout's calls: no faithful mapping of " +
				"checkout->payments cap:2 in Linkerd; name payments under linkerdService to change it for every caller",
			"two! httproute/two is a route of the Services payments, billing/payments",
		}},
		{"checkout->payments", "off", nil, false, []string{
			`consumer! no "no retries" in Linkerd for httproute/consumer, a consumer route of service/payments in billing: ` +
				"without annotations of its own it takes that Service's, which the actuator cannot read from shop, " +
				"and limit 0 means 1: no faithful mapping of checkout->payments off",
			`bare-consumer! a consumer route of service/payments in billing`,
			`producer! no "no retries" in Linkerd for a route whose Service retries: without annotations httproute/producer`,
			"two! is a route of the Services",
		}},
		{"checkout->payments", "cap:2", []string{"payments"}, false, []string{
			"payments: /metadata/annotations/retry.linkerd.io~1limit",
			"consumer: /metadata/annotations/retry.linkerd.io~1limit",
			"bare-consumer! has no retry annotations of its own",
			"producer: /metadata/annotations/retry.linkerd.io~1http /metadata/annotations/retry.linkerd.io~1limit /metadata/annotations/retry.linkerd.io~1limit",
			"two! is a route of the Services",
			"payments-own: /metadata/annotations/retry.linkerd.io~1limit",
		}},
		{"checkout->payments", "off", []string{"payments"}, false, []string{
			"payments: /metadata/annotations/retry.linkerd.io~1http /metadata/annotations/retry.linkerd.io~1limit",
			"consumer! a consumer route of service/payments in billing",
			"bare-consumer! a consumer route of service/payments in billing",
			"producer: ",
			"two! is a route of the Services",
			"payments-own: /metadata/annotations/retry.linkerd.io~1limit",
		}},
		{"checkout->ledger", "cap:2", []string{"payments"}, false, nil},
		{"checkout", "cap:2", nil, true, []string{
			"consumer! httproute/consumer: Service payments in billing has serviceprofile/payments.billing.svc.cluster.local, and Linkerd then " +
				"ignores the retry annotations of its routes, for the callers in shop: no faithful mapping of checkout cap:2 on the route",
			"bare-consumer! Service payments in billing has serviceprofile/payments.billing.svc.cluster.local",
			"producer! name payments under linkerdService to change it for every caller",
			"two! is a route of the Services",
		}},
	} {
		objs := linkerdGAMMAObjects(t)
		if tc.profile {
			sp := decode(t, `{"metadata":{"name":"payments.billing.svc.cluster.local","namespace":"shop"},"spec":{"routes":[]}}`)
			sp.SetGroupVersionKind(ServiceProfileKind)
			objs[ServiceProfileKind] = []*unstructured.Unstructured{sp}
		}
		m := Mapping{Namespace: "shop", Services: map[string]ServiceObjects{"checkout": {Linkerd: true, LinkerdService: tc.every}}}
		targets, failures := m.linkerdTargets(&lever.Lever{Kind: lever.Retries, Target: tc.target, Value: tc.value}, objs, served)
		if got := targetLines(targets, failures); !matchAll(got, tc.want) {
			t.Errorf("%s %s, linkerdService %v, profile %v:\n got  %q\n want %q", tc.target, tc.value, tc.every, tc.profile, got, tc.want)
		}
	}
}
