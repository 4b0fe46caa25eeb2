package kubernetes

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stormctl/stormctl/lever"
)

// BackendTrafficPolicyKind is Envoy Gateway's policy whose spec.retry sets
// the retries of the Gateways and routes its targetRefs attach it to.
var BackendTrafficPolicyKind = schema.GroupVersionKind{Group: "gateway.envoyproxy.io", Version: "v1alpha1", Kind: "BackendTrafficPolicy"}

// envoyGatewayTargets is what retries lever l does to the service's
// BackendTrafficPolicies: spec.retry.numRetries, which counts retries
// ("off" → 0, "cap:N" → N−1), on every policy that has a retry (none stays
// none: Envoy Gateway does not retry without one). For S->D only policies
// whose every target carries calls to D alone are changed; one attached to
// a Gateway, or to a route or rule with other backends, would change those
// calls too and is refused.
func (m Mapping) envoyGatewayTargets(l *lever.Lever, objs objects, served availability) ([]target, []failure) {
	service, dep := lever.SplitTarget(l.Target)
	retries, err := istioAttempts(l.Value)
	if err != nil {
		return nil, []failure{{lever: l, object: "backendtrafficpolicies of " + service, msg: err.Error()}}
	}
	found, problem := m.selectObjects(service, BackendTrafficPolicyKind, objs[BackendTrafficPolicyKind], served)
	var failures []failure
	if problem != "" {
		failures = append(failures, failure{lever: l, object: "backendtrafficpolicy of " + service, msg: problem})
	}
	var out []target
	for _, p := range found {
		if _, has := lookup(p.Object, "/spec/retry"); !has {
			continue
		}
		if dep != "" {
			to, why := policyCarries(p, dep, objs)
			if why != "" {
				out = append(out, target{obj: p, err: fmt.Errorf("%s %s: no faithful mapping of %s %s in Envoy Gateway",
					objectName(p), why, l.Target, l.Value)})
				continue
			}
			if !to {
				continue
			}
		}
		ptr := "/spec/retry/numRetries"
		out = append(out, target{obj: p, edits: []edit{{save: "/spec/retry", set: map[string]any{ptr: retries}}}})
	}
	return out, failures
}

// policyCarries says whether every target of the policy sends to dep alone
// (true), none sends to dep (false), or else why the policy's retry covers
// other calls too.
func policyCarries(p *unstructured.Unstructured, dep string, objs objects) (bool, string) {
	if _, has := lookup(p.Object, "/spec/targetSelectors"); has {
		return false, "selects its targets by label"
	}
	raw, _ := lookup(p.Object, "/spec/targetRefs")
	refs, _ := raw.([]any)
	if ref, _ := lookup(p.Object, "/spec/targetRef"); ref != nil {
		refs = append(refs, ref)
	}
	toDep, other := 0, 0
	for _, ref := range refs {
		m, _ := ref.(map[string]any)
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		section, _ := m["sectionName"].(string)
		var route *unstructured.Unstructured
		switch kind {
		case HTTPRouteKind.Kind:
			route = find(objs[HTTPRouteKind], name)
		case GRPCRouteKind.Kind:
			route = find(objs[GRPCRouteKind], name)
		default:
			return false, fmt.Sprintf("is attached to %s %s, whose every route it covers", strings.ToLower(kind), name)
		}
		if route == nil {
			return false, fmt.Sprintf("is attached to %s/%s, which is not in %s", strings.ToLower(kind), name, p.GetNamespace())
		}
		raw, _ := lookup(route.Object, "/spec/rules")
		rules, _ := raw.([]any)
		for _, r := range rules {
			if rn, _ := lookup(map[string]any{"r": r}, "/r/name"); section != "" && rn != section {
				continue
			}
			to, others := backendsOf(r, dep, route.GetNamespace())
			switch {
			case to && len(others) > 0:
				return false, fmt.Sprintf("covers %s, whose rule sends to %s and to %s", objectName(route), dep, strings.Join(others, ", "))
			case to:
				toDep++
			default:
				other++
			}
		}
	}
	switch {
	case toDep == 0:
		return false, ""
	case other > 0:
		return false, fmt.Sprintf("covers rules to %s and rules to other backends", dep)
	}
	return true, ""
}
