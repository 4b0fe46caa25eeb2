package kubernetes

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stormctl/stormctl/lever"
)

// claim is one lever applied to one object. A kept claim is a lever refused
// on the object: what it holds there stays as it is, neither changed nor
// restored, until the lever changes or ends.
type claim struct {
	lever *lever.Lever
	edits []edit
	keep  bool
	note  string // the target's note
}

// objects holds the cached objects of each kind in the namespace.
type objects map[schema.GroupVersionKind][]*unstructured.Unstructured

// claims works out, for every object, which levers apply to it and how;
// it also returns the problems of levers that name objects that do not
// exist or kinds the cluster does not serve (journaled as failures).
func (m Mapping) claims(levers []lever.Lever, objs objects, served availability) (map[string][]claim, map[string]*unstructured.Unstructured, []failure) {
	byKey := map[string][]claim{}
	index := map[string]*unstructured.Unstructured{}
	var failures []failure
	// The most specific lever wins a VirtualService route: edges first,
	// then service-wide levers take the routes no edge took.
	ordered := slices.Clone(levers)
	slices.SortStableFunc(ordered, func(a, b lever.Lever) int { return specificity(b) - specificity(a) })
	taken := map[string]bool{} // object key + route pointer
	for i := range ordered {
		l := &ordered[i]
		targets, fails := m.targets(l, objs, served)
		failures = append(failures, fails...)
		for _, t := range targets {
			key := objectKey(t.obj)
			if t.err != nil {
				failures = append(failures, failure{lever: l, object: objectName(t.obj), msg: t.err.Error()})
				index[key] = t.obj
				byKey[key] = append(byKey[key], claim{lever: l, keep: true})
				continue
			}
			edits := slices.DeleteFunc(t.edits, func(e edit) bool { return taken[key+e.save] })
			for _, e := range edits {
				taken[key+e.save] = true
			}
			if len(edits) == 0 {
				continue
			}
			index[key] = t.obj
			byKey[key] = append(byKey[key], claim{lever: l, edits: edits, note: t.note})
		}
	}
	return byKey, index, failures
}

// targets is every object lever l changes, in every system the mapping
// says makes the service's retries (or scales it), and the problems found.
func (m Mapping) targets(l *lever.Lever, objs objects, served availability) ([]target, []failure) {
	service, _ := lever.SplitTarget(l.Target)
	var kinds []schema.GroupVersionKind
	switch {
	case l.Kind == lever.Autoscaling:
		kinds = []schema.GroupVersionKind{HPAKind, ScaledObjectKind}
	case l.Kind != lever.Retries:
		return nil, nil
	default:
		if m.Meshed(service) {
			kinds = append(kinds, VirtualServiceKind)
		}
	}
	var out []target
	var failures []failure
	for _, gvk := range kinds {
		found, problem := m.selectObjects(service, gvk, objs[gvk], served)
		if problem != "" {
			failures = append(failures, failure{lever: l, object: shortNames[gvk] + " of " + service, msg: problem})
		}
		for _, obj := range found {
			edits, err := editsFor(l, obj)
			out = append(out, target{obj: obj, edits: edits, err: err})
		}
	}
	if l.Kind == lever.Retries && m.GatewayRouted(service) {
		t, f := m.gatewayAPITargets(l, objs, served)
		out, failures = append(out, t...), append(failures, f...)
	}
	if l.Kind == lever.Retries && m.LinkerdRouted(service) {
		t, f := m.linkerdTargets(l, objs, served)
		out, failures = append(out, t...), append(failures, f...)
	}
	if l.Kind == lever.Retries && m.EnvoyGatewayRouted(service) {
		t, f := m.envoyGatewayTargets(l, objs, served)
		out, failures = append(out, t...), append(failures, f...)
	}
	return out, failures
}

func specificity(l lever.Lever) int {
	if _, dep := lever.SplitTarget(l.Target); dep != "" {
		return 1
	}
	return 0
}

// selectObjects finds a service's objects of one kind: by name when the mapping
// names them (a missing one, or a forbidden kind, is a problem), else by the
// default labels. HPAs that KEDA owns are left to their ScaledObject, which
// KEDA would restore.
func (m Mapping) selectObjects(service string, gvk schema.GroupVersionKind, all []*unstructured.Unstructured, served availability) ([]*unstructured.Unstructured, string) {
	names := m.namesFor(service, gvk)
	if !served.ok(gvk) {
		// A kind the Role may not list may hold objects of the service
		// even when none is named: a lever that might need it fails
		// rather than seeming applied in full.
		if len(names) > 0 || served[gvk] != "" {
			return nil, served.why(gvk)
		}
		return nil, ""
	}
	if len(names) > 0 {
		var out []*unstructured.Unstructured
		var missing []string
		for _, n := range names {
			i := slices.IndexFunc(all, func(o *unstructured.Unstructured) bool { return o.GetName() == n })
			if i < 0 {
				missing = append(missing, n)
				continue
			}
			out = append(out, all[i])
		}
		if len(missing) > 0 {
			return out, fmt.Sprintf("not found: %s/%s in %s", shortNames[gvk], strings.Join(missing, ", "+shortNames[gvk]+"/"), m.Namespace)
		}
		return out, ""
	}
	return byLabel(service, gvk, all), ""
}

// byLabel finds a service's objects by the first default label key that
// selects any.
func byLabel(service string, gvk schema.GroupVersionKind, all []*unstructured.Unstructured) []*unstructured.Unstructured {
	for _, key := range DefaultLabelKeys {
		var out []*unstructured.Unstructured
		for _, o := range all {
			if o.GetLabels()[key] == service && !(gvk == HPAKind && ownedByKEDA(o)) {
				out = append(out, o)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

func (m Mapping) namesFor(service string, gvk schema.GroupVersionKind) []string {
	o := m.Services[service]
	switch gvk {
	case HPAKind:
		return o.HPA
	case ScaledObjectKind:
		return o.ScaledObject
	case HTTPRouteKind:
		return o.HTTPRoute
	case BackendTrafficPolicyKind:
		return o.BackendTrafficPolicy
	default:
		return o.VirtualService
	}
}

func ownedByKEDA(o *unstructured.Unstructured) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == ScaledObjectKind.Kind {
			return true
		}
	}
	return false
}

// objectKey names an object uniquely: Gateway API's and Linkerd's HTTPRoutes
// share a kind name, so the group is part of it.
func objectKey(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	return gvk.Kind + "." + gvk.Group + "/" + o.GetNamespace() + "/" + o.GetName()
}
