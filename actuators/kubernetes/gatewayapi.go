package kubernetes

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stormctl/stormctl/lever"
)

// HTTPRouteKind is the Gateway API route whose rules carry retry settings
// (GEP-1731, `spec.rules[].retry`). GRPCRoute has no retry field (Gateway
// API v1.7.0, Standard and Experimental), so it is not a kind the actuator
// changes.
var HTTPRouteKind = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}

// gatewayAPITargets is what retries lever l does to the service's HTTPRoutes
// (named, or by label) and to the producer routes of the Services it names
// under gatewayAPIService. GAMMA tells who a route applies to by its
// parentRef: a Service in another namespace makes a consumer route, which
// applies to the callers in the route's namespace (the service's own calls);
// a Service in the route's namespace makes a producer route, which applies to
// every caller of that Service. Changing a producer route would widen the
// lever to all of them, so it is refused unless the mapping names that
// Service (the dependency, for S->D) under gatewayAPIService.
func (m Mapping) gatewayAPITargets(l *lever.Lever, objs objects, served availability) ([]target, []failure) {
	service, dep := lever.SplitTarget(l.Target)
	routes, problem := m.selectObjects(service, HTTPRouteKind, objs[HTTPRouteKind], served)
	var failures []failure
	if problem != "" {
		failures = append(failures, failure{lever: l, object: "httproute of " + service, msg: problem})
	}
	every := m.Services[service].GatewayAPIService
	for _, name := range every {
		if dep != "" && name != dep {
			continue
		}
		what := "producer httproutes of service/" + name
		if !served.ok(HTTPRouteKind) {
			failures = append(failures, failure{lever: l, object: what, msg: served.why(HTTPRouteKind)})
			continue
		}
		producers := producerRoutes(name, objs[HTTPRouteKind])
		routes = appendNew(routes, producers...)
		if len(producers) == 0 {
			failures = append(failures, failure{lever: l, object: what,
				msg: fmt.Sprintf("not found: no HTTPRoute in %s has service/%s as its parentRef (a producer route)", m.Namespace, name)})
		}
	}
	var out []target
	for _, r := range routes {
		edits, err := httpRouteEdits(l, r)
		if err == nil && len(edits) > 0 {
			err = producerRefused(r, service, dep, every, l, gatewayAPIGAMMA)
		}
		out = append(out, target{obj: r, edits: edits, err: err, note: routeRole(r, gatewayAPIGAMMA)})
	}
	return out, failures
}

// gammaSystem is how a system that reads GAMMA routes is worded where its
// producer routes are refused or journaled: its name, what of a route
// applies, and the mapping field that opts a Service's producer routes in.
type gammaSystem struct{ name, setting, optIn string }

var (
	gatewayAPIGAMMA = gammaSystem{name: "Gateway API", setting: "its retry applies", optIn: "gatewayAPIService"}
	linkerdGAMMA    = gammaSystem{name: "Linkerd", setting: "its retry annotations apply", optIn: "linkerdService"}
)

// producerRoutes are the routes among all whose parentRef is Service name
// in the route's own namespace.
func producerRoutes(name string, all []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, r := range all {
		if own, _ := serviceParents(r); slices.Contains(own, name) {
			out = append(out, r)
		}
	}
	return out
}

// appendNew appends to routes those of more it does not hold yet.
func appendNew(routes []*unstructured.Unstructured, more ...*unstructured.Unstructured) []*unstructured.Unstructured {
	for _, r := range more {
		if !slices.Contains(routes, r) {
			routes = append(routes, r)
		}
	}
	return routes
}

// routeRole says, for the journal, whose calls a GAMMA route carries
// (empty for a gateway's route).
func routeRole(r *unstructured.Unstructured, sys gammaSystem) string {
	own, other := serviceParents(r)
	var parts []string
	for _, p := range own {
		parts = append(parts, "producer route of service/"+p+": every caller of "+p+" ("+sys.optIn+")")
	}
	for _, p := range other {
		ns, name, _ := strings.Cut(p, "/")
		parts = append(parts, "consumer route of service/"+name+" in "+ns+": the callers in "+r.GetNamespace())
	}
	return strings.Join(parts, "; ")
}

// producerRefused says why a route may not be changed for the lever: it is
// a producer route of a Service the mapping does not name for every caller
// (for S->D: of any Service but D, or of D not named).
func producerRefused(r *unstructured.Unstructured, service, dep string, every []string, l *lever.Lever, sys gammaSystem) error {
	own, _ := serviceParents(r)
	for _, p := range own {
		caller, remedy := service+"'s calls", "; name "+p+" under "+sys.optIn+" to change it for every caller"
		switch {
		case dep != "" && p != dep:
			caller, remedy = service+"'s calls to "+dep, ""
		case slices.Contains(every, p):
			continue
		}
		return fmt.Errorf("%s is a producer route of service/%s (its parentRef is in the route's own namespace, %s), "+
			"so %s to every caller of %s, not only %s: no faithful mapping of %s %s in %s%s",
			objectName(r), p, r.GetNamespace(), sys.setting, p, caller, l.Target, l.Value, sys.name, remedy)
	}
	return nil
}

// serviceParents sorts a route's GAMMA parentRefs (core Services): own
// names those in the route's namespace (producer routes), other those in
// another namespace (consumer routes), as namespace/name.
func serviceParents(r *unstructured.Unstructured) (own, other []string) {
	raw, _ := lookup(r.Object, "/spec/parentRefs")
	refs, _ := raw.([]any)
	for _, ref := range refs {
		group, kind, name, ns := refOf(ref)
		switch {
		case group != "" && group != "core" || kind != "Service":
			// a Gateway (or another kind of parent): not a GAMMA route
		case ns == "" || ns == r.GetNamespace():
			if !slices.Contains(own, name) {
				own = append(own, name)
			}
		case !slices.Contains(other, ns+"/"+name):
			other = append(other, ns+"/"+name)
		}
	}
	return own, other
}

// httpRouteEdits is what a retries lever does to one HTTPRoute:
// `retry.attempts` of every rule (S) or of every rule whose backends are all
// the dependency (S->D): Service D in the route's namespace or, on a
// consumer route of D, in D's. Gateway API counts retries, as Istio does:
// "off" → 0, "cap:N" → N−1. A rule that splits traffic between the
// dependency and other backends has one retry policy for all of them, so
// changing it would change the calls to the others too: that is refused
// rather than widened.
func httpRouteEdits(l *lever.Lever, obj *unstructured.Unstructured) ([]edit, error) {
	attempts, err := istioAttempts(l.Value)
	if err != nil {
		return nil, err
	}
	_, dep := lever.SplitTarget(l.Target)
	namespaces := []string{obj.GetNamespace()}
	_, other := serviceParents(obj)
	for _, p := range other {
		if ns, name, _ := strings.Cut(p, "/"); name == dep {
			namespaces = append(namespaces, ns)
		}
	}
	raw, _ := lookup(obj.Object, "/spec/rules")
	rules, _ := raw.([]any)
	var edits []edit
	for i, r := range rules {
		if dep != "" {
			to, others := backendsOf(r, dep, namespaces...)
			if !to {
				continue
			}
			if len(others) > 0 {
				return nil, fmt.Errorf("%s rule %d sends to %s and to %s, and a rule's retry covers all its backends: "+
					"no faithful mapping of %s %s in Gateway API; split the rule to change it", objectName(obj), i, dep,
					strings.Join(others, ", "), l.Target, l.Value)
			}
		}
		save := "/spec/rules/" + strconv.Itoa(i) + "/retry"
		edits = append(edits, edit{save: save, set: map[string]any{save + "/attempts": attempts}})
	}
	return edits, nil
}

// backendsOf says whether a rule sends to dependency (a core Service of
// that name in the route's namespace, the first of namespaces, or in any
// other of them) and names its other backends.
func backendsOf(rule any, dependency string, namespaces ...string) (bool, []string) {
	raw, _ := lookup(map[string]any{"r": rule}, "/r/backendRefs")
	refs, _ := raw.([]any)
	to := false
	var others []string
	for _, ref := range refs {
		group, kind, name, explicit := refOf(ref)
		isService := (group == "" || group == "core") && (kind == "" || kind == "Service")
		if ns := cmp.Or(explicit, namespaces[0]); isService && name == dependency && slices.Contains(namespaces, ns) {
			to = true
			continue
		}
		others = append(others, backendName(kind, name, explicit))
	}
	return to, others
}

// refOf reads a Gateway API reference (a parentRef or backendRef): its
// group, kind, name and namespace, each "" when absent.
func refOf(ref any) (group, kind, name, ns string) {
	m, _ := ref.(map[string]any)
	group, _ = m["group"].(string)
	kind, _ = m["kind"].(string)
	name, _ = m["name"].(string)
	ns, _ = m["namespace"].(string)
	return group, kind, name, ns
}

func backendName(kind, name, ns string) string {
	if kind == "" {
		kind = "Service"
	}
	s := strings.ToLower(kind) + "/" + name
	if ns != "" {
		s += " in " + ns
	}
	return s
}

// attemptsRefused words the API server refusing retry.attempts 0: an
// HTTPRoute CRD with `minimum: 1` on it (Gateway API v1.6's Experimental
// channel; v1.5 and v1.7.0 Standard accept 0) cannot say "off" or "cap:1",
// and leaving retry unset is the implementation's default, often some
// retries, not none. The served schema decides, through the server's
// answer, so no Gateway API version is assumed here. Empty when err is
// something else.
func attemptsRefused(obj *unstructured.Unstructured, err error) string {
	if obj.GroupVersionKind() != HTTPRouteKind || !strings.Contains(err.Error(), "retry.attempts") {
		return ""
	}
	return fmt.Sprintf("refused: the cluster's HTTPRoute CRD requires retry.attempts ≥ 1 (as Gateway API v1.6 Experimental does), "+
		"so no retries (off, cap:1) has no faithful mapping on %s in %s; it is left as it was", objectName(obj), obj.GetNamespace())
}
