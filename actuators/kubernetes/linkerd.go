package kubernetes

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stormctl/stormctl/lever"
)

// The kinds Linkerd (2.16+) reads retries from, besides Gateway API's
// HTTPRoute: the annotations of a Service or of a route, and a Service's
// ServiceProfile, which, where one exists, Linkerd uses instead of both.
var (
	GRPCRouteKind        = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "GRPCRoute"}
	ServiceKind          = schema.GroupVersionKind{Group: "", Version: "v1", Kind: "Service"}
	LinkerdHTTPRouteKind = schema.GroupVersionKind{Group: "policy.linkerd.io", Version: "v1beta3", Kind: "HTTPRoute"}
	ServiceProfileKind   = schema.GroupVersionKind{Group: "linkerd.io", Version: "v1alpha2", Kind: "ServiceProfile"}
)

// linkerdRouteKinds are the routes Linkerd reads retry annotations from.
var linkerdRouteKinds = []schema.GroupVersionKind{HTTPRouteKind, GRPCRouteKind, LinkerdHTTPRouteKind}

// Linkerd's retry annotations, as its policy controller parses them
// (policy-controller/k8s/index/src/outbound/index/http.rs, grpc.rs): a
// route's, when it has any, replace its Service's; none on either is no
// retries. limit counts retries; "0" is read as unset (1), so it cannot say
// "none": only the absence of every annotation does.
const (
	linkerdHTTP    = "retry.linkerd.io/http"
	linkerdGRPC    = "retry.linkerd.io/grpc"
	linkerdLimit   = "retry.linkerd.io/limit"
	linkerdTimeout = "retry.linkerd.io/timeout"
)

// target is an object a lever changes and how, or why it cannot.
type target struct {
	obj   *unstructured.Unstructured
	edits []edit
	err   error
	note  string // whose calls the object carries, journaled with what is applied
}

// linkerdTargets is what retries lever l does to Linkerd's objects of
// service: its routes to the dependency (every route for a service-wide
// lever), the Services it names under linkerdService, or their
// ServiceProfiles where they exist, and those Services' producer routes.
// Linkerd reads GAMMA routes as Gateway API does (see gatewayAPITargets): a
// consumer route (parent Service in another namespace) applies to the
// callers in the route's namespace, a producer route (parent in its own) to
// every caller of its Service, so a producer route is refused unless its
// Service is named under linkerdService.
func (m Mapping) linkerdTargets(l *lever.Lever, objs objects, served availability) ([]target, []failure) {
	service, dep := lever.SplitTarget(l.Target)
	retries, err := istioAttempts(l.Value)
	if err != nil {
		return nil, []failure{{lever: l, object: "linkerd objects of " + service, msg: err.Error()}}
	}
	var out []target
	var failures []failure
	direct := map[string]bool{} // Services this lever changes itself
	every := m.Services[service].LinkerdService
	routes, problems := m.linkerdRoutes(service, objs, served)
	for _, name := range every {
		if dep != "" && name != dep {
			continue
		}
		for _, gvk := range linkerdRouteKinds {
			if served.ok(gvk) {
				routes = appendNew(routes, producerRoutes(name, objs[gvk])...)
			}
		}
		if sp := m.serviceProfile(objs, name, m.Namespace); sp != nil {
			edits, err := profileEdits(sp, retries, l)
			out = append(out, target{obj: sp, edits: edits, err: err})
			continue
		}
		svc := find(objs[ServiceKind], name)
		if !served.ok(ServiceKind) || !served.ok(ServiceProfileKind) && served[ServiceProfileKind] != "" {
			// Without Services, or with ServiceProfiles forbidden, which
			// object Linkerd reads cannot be told.
			why := served.why(ServiceKind)
			if served.ok(ServiceKind) {
				why = served.why(ServiceProfileKind)
			}
			failures = append(failures, failure{lever: l, object: "service/" + name, msg: why})
			continue
		}
		if svc == nil {
			failures = append(failures, failure{lever: l, object: "service/" + name, msg: "not found: service/" + name + " in " + m.Namespace})
			continue
		}
		direct[name] = true
		out = append(out, target{obj: svc, edits: linkerdServiceEdits(svc, retries)})
	}
	for _, p := range problems {
		failures = append(failures, failure{lever: l, object: "linkerd routes of " + service, msg: p})
	}
	for _, r := range routes {
		own, other := serviceParents(r)
		parents := slices.Concat(own, other)
		if len(parents) == 0 || dep != "" && !slices.ContainsFunc(parents, func(p string) bool { return parentName(p) == dep }) {
			continue // not a mesh route (Linkerd reads those only), or not to dep
		}
		t := target{obj: r, note: routeRole(r, linkerdGAMMA)}
		p, ns := parentName(parents[0]), cmp.Or(parentNamespace(parents[0]), m.Namespace)
		sp := m.serviceProfile(objs, p, ns)
		switch {
		case len(parents) > 1:
			t.err = fmt.Errorf("%s is a route of the Services %s, and its retry annotations apply to all of them: "+
				"no faithful mapping of %s %s in Linkerd; give each Service its own route", objectName(r), strings.Join(parents, ", "), l.Target, l.Value)
		case sp != nil && len(own) > 0 && slices.Contains(every, p):
			continue // Linkerd reads the profile, which this lever changes, not the route
		case sp != nil:
			who, remedy := p, ": name "+p+" under linkerdService to change the profile"
			if len(own) == 0 {
				who, remedy = p+" in "+ns, ", for the callers in "+r.GetNamespace()+": no faithful mapping of "+l.Target+" "+l.Value+" on the route"
			}
			t.err = fmt.Errorf("%s: Service %s has %s, and Linkerd then ignores the retry annotations of its routes%s",
				objectName(r), who, objectName(sp), remedy)
		case len(own) == 0:
			// The consumer route's Service is in another namespace, which
			// the actuator does not read (its Role is in its own).
			t.edits, t.err = linkerdRouteEdits(r, nil, "service/"+p+" in "+ns, retries, l)
		default:
			var inherited map[string]string
			if svc := find(objs[ServiceKind], p); svc != nil && !(direct[p] && retries == 0) {
				inherited = originalAnnotations(svc)
			}
			t.edits, t.err = linkerdRouteEdits(r, inherited, "", retries, l)
			if t.err == nil && len(t.edits) > 0 {
				t.err = producerRefused(r, service, dep, every, l, linkerdGAMMA)
			}
		}
		out = append(out, t)
	}
	return out, failures
}

// parentName and parentNamespace split a parent from serviceParents: a
// name (in the route's namespace) or namespace/name.
func parentName(p string) string {
	_, name, _ := strings.Cut(p, "/")
	return cmp.Or(name, p)
}

func parentNamespace(p string) string {
	ns, _, found := strings.Cut(p, "/")
	if !found {
		return ""
	}
	return ns
}

// linkerdRoutes finds the service's routes: by name across the three route
// kinds, else by label when the service is marked linkerd.
func (m Mapping) linkerdRoutes(service string, objs objects, served availability) ([]*unstructured.Unstructured, []string) {
	o := m.Services[service]
	var out []*unstructured.Unstructured
	if len(o.LinkerdRoute) > 0 {
		var missing []string
		for _, n := range o.LinkerdRoute {
			found := false
			for _, gvk := range linkerdRouteKinds {
				if r := find(objs[gvk], n); r != nil {
					out, found = append(out, r), true
				}
			}
			if !found {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return out, []string{fmt.Sprintf("not found: no HTTPRoute or GRPCRoute named %s in %s", strings.Join(missing, ", "), m.Namespace)}
		}
		return out, nil
	}
	if !o.Linkerd {
		return nil, nil
	}
	var problems []string
	for _, gvk := range linkerdRouteKinds {
		switch {
		case served.ok(gvk):
			out = append(out, byLabel(service, gvk, objs[gvk])...)
		case served[gvk] != "":
			problems = append(problems, served.why(gvk)) // forbidden: it may hold routes of the service
		}
	}
	return out, problems
}

// serviceProfile is the ServiceProfile Linkerd uses for Service name in
// namespace ns, if the actuator's namespace holds one: the Service's own,
// or, for a Service of another namespace, its callers' there.
func (m Mapping) serviceProfile(objs objects, name, ns string) *unstructured.Unstructured {
	domain := m.ClusterDomain
	if domain == "" {
		domain = "cluster.local"
	}
	return find(objs[ServiceProfileKind], name+"."+ns+".svc."+domain)
}

// linkerdServiceEdits: off removes every retry annotation of the Service;
// cap:N sets limit N−1 where it has retries (none stays none).
func linkerdServiceEdits(svc *unstructured.Unstructured, retries int64) []edit {
	own := retryAnnotations(originalAnnotations(svc), linkerdHTTP, linkerdGRPC, linkerdLimit, linkerdTimeout)
	return annotationEdits(own, retries)
}

// linkerdRouteEdits: a route with retry annotations of its own is changed
// like a Service. One without inherits its Service's: cap:N copies them onto
// the route with limit N−1; off cannot be said on the route then (no
// annotation means "as the Service", and limit 0 means 1), so it is refused.
// unread names the Service when the actuator cannot read it (a consumer
// route's, in another namespace): what the route would inherit is unknown,
// so off and a cap on a route without annotations of its own are refused.
func linkerdRouteEdits(r *unstructured.Unstructured, inherited map[string]string, unread string, retries int64, l *lever.Lever) ([]edit, error) {
	cond := linkerdHTTP
	if r.GroupVersionKind() == GRPCRouteKind {
		cond = linkerdGRPC
	}
	own := retryAnnotations(originalAnnotations(r), cond, linkerdLimit, linkerdTimeout)
	from := retryAnnotations(inherited, cond, linkerdLimit, linkerdTimeout)
	switch {
	case unread != "" && retries == 0:
		return nil, fmt.Errorf("no \"no retries\" in Linkerd for %s, a consumer route of %s: without annotations of its own "+
			"it takes that Service's, which the actuator cannot read from %s, and limit 0 means 1: no faithful mapping of %s %s",
			objectName(r), unread, r.GetNamespace(), l.Target, l.Value)
	case unread != "" && len(own) == 0:
		return nil, fmt.Errorf("%s has no retry annotations of its own, so it takes those of %s, which the actuator cannot read "+
			"from %s: no faithful mapping of %s %s in Linkerd; give the route retry annotations of its own",
			objectName(r), unread, r.GetNamespace(), l.Target, l.Value)
	case retries == 0 && len(from) > 0:
		return nil, fmt.Errorf("no \"no retries\" in Linkerd for a route whose Service retries: without annotations %s "+
			"takes the Service's retries (%s), and limit 0 means 1: no faithful mapping of %s %s; "+
			"name the Service under linkerdService", objectName(r), strings.Join(from, ", "), l.Target, l.Value)
	case len(own) > 0 || retries == 0:
		return annotationEdits(own, retries), nil
	case len(from) == 0:
		return nil, nil // no retries to cap
	}
	var edits []edit
	for _, k := range from {
		ptr := annotationPtr(k)
		edits = append(edits, edit{save: ptr, set: map[string]any{ptr: inherited[k]}})
	}
	return append(edits, limitEdit(retries)), nil
}

// annotationEdits removes the present retry annotations (off) or sets the
// limit (cap) where there are any.
func annotationEdits(present []string, retries int64) []edit {
	if len(present) == 0 {
		return nil
	}
	if retries > 0 {
		return []edit{limitEdit(retries)}
	}
	var edits []edit
	for _, k := range present {
		ptr := annotationPtr(k)
		edits = append(edits, edit{save: ptr, set: map[string]any{ptr: nil}})
	}
	return edits
}

func limitEdit(retries int64) edit {
	ptr := annotationPtr(linkerdLimit)
	return edit{save: ptr, set: map[string]any{ptr: strconv.FormatInt(retries, 10)}}
}

func annotationPtr(key string) string { return "/metadata/annotations/" + escape(key) }

// originalAnnotations is the object's annotations as they were before
// stormctl changed them (from its saved annotation), so a lever's edits are
// the same on every pass: what a cap copied or an off removed does not
// change what the next value does.
func originalAnnotations(u *unstructured.Unstructured) map[string]string {
	out := maps.Clone(u.GetAnnotations())
	if out == nil {
		out = map[string]string{}
	}
	const prefix = "/metadata/annotations/"
	for ptr, before := range savedBefore(u) {
		toks, err := splitPointer(ptr)
		if err != nil || !strings.HasPrefix(ptr, prefix) || len(toks) != 3 {
			continue
		}
		var v *string
		if json.Unmarshal(before, &v) != nil {
			continue
		}
		if v == nil {
			delete(out, toks[2])
		} else {
			out[toks[2]] = *v
		}
	}
	return out
}

// retryAnnotations lists which of keys are set, in keys' order.
func retryAnnotations(ann map[string]string, keys ...string) []string {
	var out []string
	for _, k := range keys {
		if _, ok := ann[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// profileEdits: a ServiceProfile says retries per route (isRetryable) within
// one retryBudget, a share of extra requests over the whole Service, not a
// count per request. off sets isRetryable false on the routes that had it
// true before stormctl; cap:N has no faithful mapping and is refused.
func profileEdits(sp *unstructured.Unstructured, retries int64, l *lever.Lever) ([]edit, error) {
	if retries > 0 {
		return nil, fmt.Errorf("%s bounds retries by its retryBudget (a ratio of extra requests over the whole Service), "+
			"not a number per request: no faithful mapping of %s %s in Linkerd; use off", objectName(sp), l.Target, l.Value)
	}
	raw, _ := lookup(sp.Object, "/spec/routes")
	routes, _ := raw.([]any)
	before := savedBefore(sp)
	var edits []edit
	for i, r := range routes {
		ptr := "/spec/routes/" + strconv.Itoa(i) + "/isRetryable"
		v, _ := lookup(map[string]any{"r": r}, "/r/isRetryable")
		if b, ok := before[ptr]; ok {
			// Judged by the value before stormctl, as Linkerd's annotations
			// are (originalAnnotations): judged by the value now, the route
			// off turned false would drop out of the next pass's edits and
			// be restored while the lever holds, and one another writer
			// changed since would be forgotten, not reported.
			v = nil
			_ = json.Unmarshal(b, &v)
		}
		if v == true {
			edits = append(edits, edit{save: ptr, set: map[string]any{ptr: false}})
		}
	}
	return edits, nil
}

// savedBefore is what stormctl saved of the object before changing it, by
// pointer, across the levers holding it.
func savedBefore(u *unstructured.Unstructured) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	saved, err := readSaved(u.Object)
	if err != nil {
		return out
	}
	for _, s := range saved {
		maps.Copy(out, s.Before)
	}
	return out
}

func find(all []*unstructured.Unstructured, name string) *unstructured.Unstructured {
	for _, o := range all {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}
